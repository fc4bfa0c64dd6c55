// Attention row kernels: masked softmax (+ log-sum-exp), its backward, the attention-backward score
// gradients, and the online-softmax merge of two partial attention results.
#include "runtime/cuda/detail/numeric.cuh"

namespace spsim::rt::cuda_detail {
namespace {

__device__ __forceinline__ bool allowed(const DeviceMask& m, Index r, Index c) {
  return !m.causal || m.cols[c] <= m.rows[r];
}

// One block per row. Three passes over the row (max, sum, write) keep registers independent of cols.
template <class In, class Out>
__global__ void softmax_rows_kernel(const In* x, Out* y, Out* lse, Index rows, Index cols, Acc<Out> scale,
                                    DeviceMask mask) {
  using A = Acc<Out>;
  __shared__ A scratch[32];
  const Index row = blockIdx.x;  // batch * rows + r
  const Index r = row % rows;
  const In* xr = x + row * cols;
  Out* yr = y + row * cols;

  A mx = neg_inf<A>();
  for (Index c = threadIdx.x; c < cols; c += blockDim.x)
    if (allowed(mask, r, c)) mx = MaxOp{}(mx, scale * convert<A>(xr[c]));
  mx = block_reduce(mx, MaxOp{}, scratch);
  if (mx == neg_inf<A>()) {  // fully masked row (uniform across the block)
    for (Index c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = convert<Out>(A(0));
    if (lse && threadIdx.x == 0) lse[row] = convert<Out>(neg_inf<A>());
    return;
  }
  A sum = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x)
    if (allowed(mask, r, c)) sum += exp_(scale * convert<A>(xr[c]) - mx);
  sum = block_reduce(sum, SumOp{}, scratch);
  const A inv = A(1) / sum;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = convert<Out>(allowed(mask, r, c) ? exp_(scale * convert<A>(xr[c]) - mx) * inv : A(0));
  if (lse && threadIdx.x == 0) lse[row] = convert<Out>(mx + log_(sum));
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, Index cols, Acc<T> scale) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const Index base = static_cast<Index>(blockIdx.x) * cols;
  A dot = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x)
    dot += convert<A>(y[base + c]) * convert<A>(dy[base + c]);
  dot = block_reduce(dot, SumOp{}, scratch);
  for (Index c = threadIdx.x; c < cols; c += blockDim.x) {
    const A yv = convert<A>(y[base + c]);
    dx[base + c] = convert<T>(scale * yv * (convert<A>(dy[base + c]) - dot));
  }
}

template <class T>
__global__ void row_dot_kernel(const T* a, const T* b, Acc<T>* out, Index cols) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const Index base = static_cast<Index>(blockIdx.x) * cols;
  A dot = 0;
  for (Index c = threadIdx.x; c < cols; c += blockDim.x)
    dot += convert<A>(a[base + c]) * convert<A>(b[base + c]);
  dot = block_reduce(dot, SumOp{}, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = dot;
}

// p_out may alias s and ds_out may alias dp (T == Acc<T>): each element is read before it is written,
// by the same thread, so no __restrict__ here.
template <class T>
__global__ void attention_grad_scores_kernel(const Acc<T>* s, const Acc<T>* dp, const T* lse,
                                             const Acc<T>* dsum, T* p_out, T* ds_out, Index rows, Index cols,
                                             Index n, DeviceMask mask) {
  using A = Acc<T>;
  SPSIM_GRID_STRIDE(i, n) {
    const Index row = i / cols;
    const Index c = i % cols;
    const A l = convert<A>(lse[row]);
    const A p = (l != neg_inf<A>() && allowed(mask, row % rows, c)) ? exp_(s[i] - l) : A(0);
    const A ds = p * (dp[i] - dsum[row]);
    p_out[i] = convert<T>(p);
    ds_out[i] = convert<T>(ds);
  }
}

// lse' = log(e^lse + e^lse_blk), o' = e^(lse − lse') o + e^(lse_blk − lse') o_blk. A side whose lse is
// −inf contributes nothing (its o is not read, so garbage there cannot leak in as NaN).
template <class T>
__global__ void merge_attention_kernel(T* o, T* lse, const T* o_blk, const T* lse_blk, Index d) {
  using A = Acc<T>;
  const Index row = blockIdx.x;
  const A la = convert<A>(lse[row]), lb = convert<A>(lse_blk[row]);
  __syncthreads();  // every thread has read lse[row] before thread 0 overwrites it
  if (lb == neg_inf<A>()) return;
  const A m = MaxOp{}(la, lb);
  const A l = m + log_(exp_(la - m) + exp_(lb - m));
  const A wa = la == neg_inf<A>() ? A(0) : exp_(la - l);
  const A wb = exp_(lb - l);
  T* orow = o + row * d;
  const T* brow = o_blk + row * d;
  for (Index c = threadIdx.x; c < d; c += blockDim.x) {
    const A ov = la == neg_inf<A>() ? A(0) : wa * convert<A>(orow[c]);
    orow[c] = convert<T>(ov + wb * convert<A>(brow[c]));
  }
  if (threadIdx.x == 0) lse[row] = convert<T>(l);
}

void check_rows(Index nrows, const char* what) {
  if (nrows > 0x7fffffff) throw RuntimeError(std::string(what) + ": too many rows for one launch");
}

}  // namespace

void softmax_rows(DType in, DType out, const void* x, void* y, void* lse, Index batch, Index rows, Index cols,
                  double scale, const DeviceMask& mask, cudaStream_t stream) {
  const Index nrows = batch * rows;
  if (nrows == 0) return;
  check_rows(nrows, "softmax");
  const auto grid = static_cast<unsigned>(nrows);
  const unsigned threads = row_threads(cols);
  dispatch(out, [&](auto tag) {
    using Out = typename decltype(tag)::type;
    using A = Acc<Out>;
    Out* yo = static_cast<Out*>(y);
    Out* lo = static_cast<Out*>(lse);
    if (in == out) {
      softmax_rows_kernel<Out, Out><<<grid, threads, 0, stream>>>(static_cast<const Out*>(x), yo, lo, rows,
                                                                  cols, static_cast<A>(scale), mask);
    } else if (in == acc_dtype(out)) {
      softmax_rows_kernel<A, Out><<<grid, threads, 0, stream>>>(static_cast<const A*>(x), yo, lo, rows, cols,
                                                                static_cast<A>(scale), mask);
    } else {
      throw RuntimeError("softmax_rows: input dtype must be the output dtype or its accumulation type");
    }
  });
  SPSIM_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
}

void softmax_backward_rows(DType dt, const void* y, const void* dy, void* dx, Index nrows, Index cols,
                           double scale, cudaStream_t stream) {
  if (nrows == 0) return;
  check_rows(nrows, "softmax_backward");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_kernel<T><<<static_cast<unsigned>(nrows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), cols,
        static_cast<Acc<T>>(scale));
  });
  SPSIM_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
}

void row_dot(DType dt, const void* a, const void* b, void* out, Index nrows, Index cols,
             cudaStream_t stream) {
  if (nrows == 0) return;
  check_rows(nrows, "row_dot");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    row_dot_kernel<T><<<static_cast<unsigned>(nrows), row_threads(cols), 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<Acc<T>*>(out), cols);
  });
  SPSIM_CUDA_CHECK_LAUNCH("row_dot_kernel");
}

void attention_grad_scores(DType dt, const void* s, const void* dp, const void* lse, const void* dsum,
                           void* p_out, void* ds_out, Index batch, Index rows, Index cols,
                           const DeviceMask& mask, cudaStream_t stream) {
  const Index n = batch * rows * cols;
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    attention_grad_scores_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const A*>(s), static_cast<const A*>(dp), static_cast<const T*>(lse),
        static_cast<const A*>(dsum), static_cast<T*>(p_out), static_cast<T*>(ds_out), rows, cols, n, mask);
  });
  SPSIM_CUDA_CHECK_LAUNCH("attention_grad_scores_kernel");
}

void merge_attention(DType dt, void* o, void* lse, const void* o_blk, const void* lse_blk, Index nrows,
                     Index d, cudaStream_t stream) {
  if (nrows == 0) return;
  check_rows(nrows, "merge_attention");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    merge_attention_kernel<T><<<static_cast<unsigned>(nrows), row_threads(d), 0, stream>>>(
        static_cast<T*>(o), static_cast<T*>(lse), static_cast<const T*>(o_blk),
        static_cast<const T*>(lse_blk), d);
  });
  SPSIM_CUDA_CHECK_LAUNCH("merge_attention_kernel");
}

}  // namespace spsim::rt::cuda_detail
