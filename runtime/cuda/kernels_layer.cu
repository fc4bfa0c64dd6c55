// Transformer-layer kernels: bias add, column sums (bias/LayerNorm parameter gradients), LayerNorm fwd/bwd.
#include "runtime/cuda/detail/numeric.cuh"

namespace spsim::rt::cuda_detail {
namespace {

template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, Index cols, Index n) {
  SPSIM_GRID_STRIDE(i, n) y[i] = convert<T>(convert<Acc<T>>(y[i]) + convert<Acc<T>>(bias[i % cols]));
}

// One thread per column walks the rows: coalesced across the warp, and a fixed summation order.
template <class T>
__global__ void column_sum_add_kernel(const T* x, T* out, Index rows, Index cols) {
  SPSIM_GRID_STRIDE(c, cols) {
    Acc<T> sum = 0;
    for (Index r = 0; r < rows; ++r) sum += convert<Acc<T>>(x[r * cols + c]);
    out[c] = convert<T>(convert<Acc<T>>(out[c]) + sum);
  }
}

// One block per row; two passes (mean, then centred variance) for accuracy. Biased variance, as PyTorch.
template <class T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, Acc<T> eps, T* y, T* mean_out,
                                  T* rstd_out, Index cols) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const Index row = blockIdx.x;
  const T* xr = x + row * cols;
  A sum = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) sum += convert<A>(xr[c]);
  const A mean = block_reduce(sum, SumOp{}, scratch) / static_cast<A>(cols);
  A sq = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) {
    const A d = convert<A>(xr[c]) - mean;
    sq += d * d;
  }
  const A rstd = rsqrt_(block_reduce(sq, SumOp{}, scratch) / static_cast<A>(cols) + eps);
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) {
    const A xhat = (convert<A>(xr[c]) - mean) * rstd;
    y[row * cols + c] = convert<T>(xhat * convert<A>(gamma[c]) + convert<A>(beta[c]));
  }
  if (threadIdx.x == 0) {
    mean_out[row] = convert<T>(mean);
    rstd_out[row] = convert<T>(rstd);
  }
}

template <class T>
__global__ void layer_norm_backward_dx_kernel(const T* x, const T* gamma, const T* mean_in, const T* rstd_in,
                                              const T* dy, T* dx, Index cols, bool accumulate) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const Index row = blockIdx.x;
  const Index base = row * cols;
  const A mean = convert<A>(mean_in[row]), rstd = convert<A>(rstd_in[row]);
  A sum_g = 0, sum_gx = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) {
    const A g = convert<A>(dy[base + c]) * convert<A>(gamma[c]);
    sum_g += g;
    sum_gx += g * (convert<A>(x[base + c]) - mean) * rstd;
  }
  const A mean_g = block_reduce(sum_g, SumOp{}, scratch) / static_cast<A>(cols);
  const A mean_gx = block_reduce(sum_gx, SumOp{}, scratch) / static_cast<A>(cols);
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) {
    const A g = convert<A>(dy[base + c]) * convert<A>(gamma[c]);
    const A xhat = (convert<A>(x[base + c]) - mean) * rstd;
    A v = rstd * (g - mean_g - xhat * mean_gx);
    if (accumulate) v += convert<A>(dx[base + c]);
    dx[base + c] = convert<T>(v);
  }
}

template <class T>
__global__ void layer_norm_backward_params_kernel(const T* x, const T* mean_in, const T* rstd_in, const T* dy,
                                                  T* dgamma, T* dbeta, Index rows, Index cols) {
  using A = Acc<T>;
  SPSIM_GRID_STRIDE(c, cols) {
    A sg = 0, sb = 0;
    for (Index r = 0; r < rows; ++r) {
      const A g = convert<A>(dy[r * cols + c]);
      sg += g * (convert<A>(x[r * cols + c]) - convert<A>(mean_in[r])) * convert<A>(rstd_in[r]);
      sb += g;
    }
    dgamma[c] = convert<T>(convert<A>(dgamma[c]) + sg);
    dbeta[c] = convert<T>(convert<A>(dbeta[c]) + sb);
  }
}

void check_rows(Index nrows, const char* what) {
  if (nrows > 0x7fffffff) throw RuntimeError(std::string(what) + ": too many rows for one launch");
}

}  // namespace

void add_bias(DType dt, void* y, const void* bias, Index rows, Index cols, cudaStream_t stream) {
  const Index n = rows * cols;
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_bias_kernel<T>
        <<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), cols, n);
  });
  SPSIM_CUDA_CHECK_LAUNCH("add_bias_kernel");
}

void column_sum_add(DType dt, const void* x, void* out, Index rows, Index cols, cudaStream_t stream) {
  if (cols == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    column_sum_add_kernel<T>
        <<<grid_for(cols), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), rows, cols);
  });
  SPSIM_CUDA_CHECK_LAUNCH("column_sum_add_kernel");
}

void layer_norm(DType dt, const void* x, const void* gamma, const void* beta, double eps, void* y, void* mean,
                void* rstd, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0) return;
  check_rows(rows, "layer_norm");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_kernel<T><<<static_cast<unsigned>(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        static_cast<Acc<T>>(eps), static_cast<T*>(y), static_cast<T*>(mean), static_cast<T*>(rstd), cols);
  });
  SPSIM_CUDA_CHECK_LAUNCH("layer_norm_kernel");
}

void layer_norm_backward_dx(DType dt, const void* x, const void* gamma, const void* mean, const void* rstd,
                            const void* dy, void* dx, Index rows, Index cols, bool accumulate,
                            cudaStream_t stream) {
  if (rows == 0) return;
  check_rows(rows, "layer_norm_backward");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_backward_dx_kernel<T><<<static_cast<unsigned>(rows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(mean),
        static_cast<const T*>(rstd), static_cast<const T*>(dy), static_cast<T*>(dx), cols, accumulate);
  });
  SPSIM_CUDA_CHECK_LAUNCH("layer_norm_backward_dx_kernel");
}

void layer_norm_backward_params(DType dt, const void* x, const void* mean, const void* rstd, const void* dy,
                                void* dgamma, void* dbeta, Index rows, Index cols, cudaStream_t stream) {
  if (cols == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_backward_params_kernel<T><<<grid_for(cols), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(mean), static_cast<const T*>(rstd),
        static_cast<const T*>(dy), static_cast<T*>(dgamma), static_cast<T*>(dbeta), rows, cols);
  });
  SPSIM_CUDA_CHECK_LAUNCH("layer_norm_backward_params_kernel");
}

}  // namespace spsim::rt::cuda_detail
