// Elementwise kernels: fill, dtype conversion to/from fp64, axpby, scale, exact GeLU, SwiGLU and dropout with
// their backwards.
#include "runtime/core/dropout_mask.hpp"
#include "runtime/cuda/detail/numeric.cuh"

namespace spsim::rt::cuda_detail {
namespace {

template <class T>
__global__ void fill_kernel(T* x, Index n, double value) {
  const T v = convert<T>(value);
  SPSIM_GRID_STRIDE(i, n) x[i] = v;
}

template <class T>
__global__ void from_f64_kernel(const double* src, T* dst, Index n) {
  SPSIM_GRID_STRIDE(i, n) dst[i] = convert<T>(src[i]);
}

template <class T>
__global__ void to_f64_kernel(const T* src, double* dst, Index n) {
  SPSIM_GRID_STRIDE(i, n) dst[i] = convert<double>(src[i]);
}

template <class T>
__global__ void axpby_kernel(const T* a, const T* b, T* out, Index n, Acc<T> alpha, Acc<T> beta) {
  SPSIM_GRID_STRIDE(i, n) {
    out[i] = convert<T>(alpha * convert<Acc<T>>(a[i]) + beta * convert<Acc<T>>(b[i]));
  }
}

template <class T>
__global__ void scale_kernel(T* x, Index n, Acc<T> alpha) {
  SPSIM_GRID_STRIDE(i, n) x[i] = convert<T>(alpha * convert<Acc<T>>(x[i]));
}

// Inverted dropout, the mask drawn from the seed (runtime/core/dropout_mask.hpp: the CPU device's mask)
// and stored a byte per element for the backward; residual may be null.
template <class T>
__global__ void dropout_kernel(const T* x, const T* residual, T* y, unsigned char* mask, Index n, double p,
                               std::uint64_t seed) {
  using A = Acc<T>;
  const A keep_scale = static_cast<A>(1.0 / (1.0 - p));
  SPSIM_GRID_STRIDE(i, n) {
    const bool keep = dropout_keep(seed, static_cast<std::uint64_t>(i), p);
    mask[i] = keep ? 1 : 0;
    const A kept = keep ? convert<A>(x[i]) * keep_scale : A(0);
    y[i] = convert<T>(residual != nullptr ? convert<A>(residual[i]) + kept : kept);
  }
}

template <class T>
__global__ void dropout_backward_kernel(const T* dy, const unsigned char* mask, T* dx, Index n, double p) {
  using A = Acc<T>;
  const A keep_scale = static_cast<A>(1.0 / (1.0 - p));
  SPSIM_GRID_STRIDE(i, n) { dx[i] = convert<T>(mask[i] != 0 ? convert<A>(dy[i]) * keep_scale : A(0)); }
}

// Exact GeLU: y = x Φ(x), Φ(x) = (1 + erf(x / √2)) / 2.
template <class T>
__global__ void gelu_kernel(const T* x, T* y, Index n) {
  using A = Acc<T>;
  const A inv_sqrt2 = static_cast<A>(0.70710678118654752440);
  SPSIM_GRID_STRIDE(i, n) {
    const A v = convert<A>(x[i]);
    y[i] = convert<T>(v * static_cast<A>(0.5) * (static_cast<A>(1) + erf_(v * inv_sqrt2)));
  }
}

// d/dx [x Φ(x)] = Φ(x) + x φ(x), φ(x) = exp(−x²/2) / √(2π).
template <class T>
__global__ void gelu_backward_kernel(const T* x, const T* dy, T* dx, Index n) {
  using A = Acc<T>;
  const A inv_sqrt2 = static_cast<A>(0.70710678118654752440);
  const A inv_sqrt_2pi = static_cast<A>(0.39894228040143267794);
  SPSIM_GRID_STRIDE(i, n) {
    const A v = convert<A>(x[i]);
    const A cdf = static_cast<A>(0.5) * (static_cast<A>(1) + erf_(v * inv_sqrt2));
    const A pdf = inv_sqrt_2pi * exp_(static_cast<A>(-0.5) * v * v);
    dx[i] = convert<T>(convert<A>(dy[i]) * (cdf + v * pdf));
  }
}

// SwiGLU's gate: y = u σ(u) · v.
template <class T>
__global__ void swiglu_kernel(const T* gate, const T* up, T* y, Index n) {
  using A = Acc<T>;
  SPSIM_GRID_STRIDE(i, n) {
    const A u = convert<A>(gate[i]);
    const A s = static_cast<A>(1) / (static_cast<A>(1) + exp_(-u));
    y[i] = convert<T>(u * s * convert<A>(up[i]));
  }
}

// dgate = dy · v · σ(u)(1 + u(1 − σ(u))), dup = dy · u σ(u).
template <class T>
__global__ void swiglu_backward_kernel(const T* gate, const T* up, const T* dy, T* dgate, T* dup, Index n) {
  using A = Acc<T>;
  SPSIM_GRID_STRIDE(i, n) {
    const A u = convert<A>(gate[i]), v = convert<A>(up[i]), g = convert<A>(dy[i]);
    const A s = static_cast<A>(1) / (static_cast<A>(1) + exp_(-u));
    dgate[i] = convert<T>(g * v * s * (static_cast<A>(1) + u * (static_cast<A>(1) - s)));
    dup[i] = convert<T>(g * u * s);
  }
}

}  // namespace

void fill(DType dt, void* x, Index n, double value, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), n, value);
  });
  SPSIM_CUDA_CHECK_LAUNCH("fill_kernel");
}

void convert_from_f64(DType dt, const double* src, void* dst, Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    from_f64_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(src, static_cast<T*>(dst), n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("from_f64_kernel");
}

void convert_to_f64(DType dt, const void* src, double* dst, Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    to_f64_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("to_f64_kernel");
}

void axpby(DType dt, const void* a, const void* b, void* out, Index n, double alpha, double beta,
           cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    axpby_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                          static_cast<T*>(out), n, static_cast<Acc<T>>(alpha),
                                                          static_cast<Acc<T>>(beta));
  });
  SPSIM_CUDA_CHECK_LAUNCH("axpby_kernel");
}

void scale(DType dt, void* x, Index n, double alpha, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scale_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(x), n, static_cast<Acc<T>>(alpha));
  });
  SPSIM_CUDA_CHECK_LAUNCH("scale_kernel");
}

void dropout(DType dt, const void* x, const void* residual, void* y, void* mask, Index n, double p,
             std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dropout_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(residual),
                                                           static_cast<T*>(y), static_cast<unsigned char*>(mask), n,
                                                           p, seed);
  });
  SPSIM_CUDA_CHECK_LAUNCH("dropout_kernel");
}

void dropout_backward(DType dt, const void* dy, const void* mask, void* dx, Index n, double p,
                      cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dropout_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const unsigned char*>(mask), static_cast<T*>(dx), n, p);
  });
  SPSIM_CUDA_CHECK_LAUNCH("dropout_backward_kernel");
}

void gelu(DType dt, const void* x, void* y, Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gelu_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("gelu_kernel");
}

void gelu_backward(DType dt, const void* x, const void* dy, void* dx, Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gelu_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("gelu_backward_kernel");
}

void swiglu(DType dt, const void* gate, const void* up, void* y, Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    swiglu_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(gate), static_cast<const T*>(up),
                                                          static_cast<T*>(y), n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("swiglu_kernel");
}

void swiglu_backward(DType dt, const void* gate, const void* up, const void* dy, void* dgate, void* dup,
                     Index n, cudaStream_t stream) {
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    swiglu_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<const T*>(dy), static_cast<T*>(dgate),
        static_cast<T*>(dup), n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
}

}  // namespace spsim::rt::cuda_detail
