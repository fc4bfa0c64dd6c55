// Host-side launchers of the CUDA kernels (defined in runtime/cuda/*.cu), called by CudaDevice and NcclComm.
//
// Pointers are device addresses of contiguous row-major data of the stated DType. "acc" buffers hold the
// accumulation type of a dtype: fp64 for fp64, fp32 otherwise (acc_dtype). Every launcher queues on
// `stream` and checks the launch; none synchronizes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/tensor.hpp"

namespace spsim::rt::cuda_detail {

using Index = std::int64_t;

[[nodiscard]] constexpr DType acc_dtype(DType dt) {
  return dt == DType::f64 ? DType::f64 : DType::f32;
}

// Causal mask on device: row r may see column c iff cols[c] <= rows[r]; positions are global tokens.
struct DeviceMask {
  bool causal = false;
  const Index* rows = nullptr;
  const Index* cols = nullptr;
};

// ---- elementwise (kernels_elementwise.cu) ----------------------------------------------------------
void fill(DType dt, void* x, Index n, double value, cudaStream_t stream);
void convert_from_f64(DType dt, const double* src, void* dst, Index n, cudaStream_t stream);
void convert_to_f64(DType dt, const void* src, double* dst, Index n, cudaStream_t stream);
// out = alpha a + beta b (out may alias a or b).
void axpby(DType dt, const void* a, const void* b, void* out, Index n, double alpha, double beta,
           cudaStream_t stream);
void scale(DType dt, void* x, Index n, double alpha, cudaStream_t stream);
// y = residual + keep ⊙ x / (1 − p) (residual may be null), keep stored a byte per element in mask;
// dx = keep ⊙ dy / (1 − p).
void dropout(DType dt, const void* x, const void* residual, void* y, void* mask, Index n, double p,
             std::uint64_t seed, cudaStream_t stream);
void dropout_backward(DType dt, const void* dy, const void* mask, void* dx, Index n, double p,
                      cudaStream_t stream);
void gelu(DType dt, const void* x, void* y, Index n, cudaStream_t stream);
void gelu_backward(DType dt, const void* x, const void* dy, void* dx, Index n, cudaStream_t stream);
void swiglu(DType dt, const void* gate, const void* up, void* y, Index n, cudaStream_t stream);
void swiglu_backward(DType dt, const void* gate, const void* up, const void* dy, void* dgate, void* dup,
                     Index n, cudaStream_t stream);

// ---- layout (kernels_layout.cu) ----------------------------------------------------------------------
// A block of a tensor seen as [outer, extent, inner]: element (o, l, i), l < len, moves from
// src[o, src_start + l, i] to dst[o, dst_start + l, i], assigned or added.
struct BlockCopy {
  Index outer = 1, len = 0, inner = 1;
  Index src_extent = 0, src_start = 0;
  Index dst_extent = 0, dst_start = 0;
};
void copy_block(DType dt, const void* src, void* dst, const BlockCopy& block, bool accumulate,
                cudaStream_t stream);
// dst = src permuted: dst dims are dims[perm[i]]; up to 4 dims (pad with leading 1s), any element size.
void permute(std::size_t elem_bytes, const void* src, void* dst, const Index (&dims)[4], const int (&perm)[4],
             cudaStream_t stream);

// ---- attention rows (kernels_attention.cu) -------------------------------------------------------------
// y = masked softmax over the last dim of scale * x, x: [batch, rows, cols] in dtype `in` (the dtype or
// its acc type), y in `out`; fully masked rows give 0. lse (dtype `out`, [batch*rows]) is written when
// non-null: log Σ exp(scale x) over the allowed columns, −inf for a fully masked row.
void softmax_rows(DType in, DType out, const void* x, void* y, void* lse, Index batch, Index rows, Index cols,
                  double scale, const DeviceMask& mask, cudaStream_t stream);
// dx = scale * y ⊙ (dy − rowsum(dy ⊙ y)), all [nrows, cols].
void softmax_backward_rows(DType dt, const void* y, const void* dy, void* dx, Index nrows, Index cols,
                           double scale, cudaStream_t stream);
// out[r] = Σ_c a[r, c] b[r, c]; out is acc.
void row_dot(DType dt, const void* a, const void* b, void* out, Index nrows, Index cols, cudaStream_t stream);
// Attention backward, elementwise over [batch, rows, cols]: p = exp(s − lse) where allowed and lse finite
// (else 0), ds = p (dp − dsum[row]). s, dp, dsum are acc; lse, p_out, ds_out are dtype. p_out may alias s
// and ds_out may alias dp when dtype is its own acc type.
void attention_grad_scores(DType dt, const void* s, const void* dp, const void* lse, const void* dsum,
                           void* p_out, void* ds_out, Index batch, Index rows, Index cols,
                           const DeviceMask& mask, cudaStream_t stream);
// Online-softmax merge of (o_blk, lse_blk) into (o, lse): o: [nrows, d], lse: [nrows].
void merge_attention(DType dt, void* o, void* lse, const void* o_blk, const void* lse_blk, Index nrows,
                     Index d, cudaStream_t stream);

// ---- layer ops (kernels_layer.cu) ----------------------------------------------------------------------
void add_bias(DType dt, void* y, const void* bias, Index rows, Index cols, cudaStream_t stream);
// out[c] += Σ_r x[r, c].
void column_sum_add(DType dt, const void* x, void* out, Index rows, Index cols, cudaStream_t stream);
void layer_norm(DType dt, const void* x, const void* gamma, const void* beta, double eps, void* y, void* mean,
                void* rstd, Index rows, Index cols, cudaStream_t stream);
// dx (= or +=) rstd (g − mean(g) − x̂ mean(g x̂)) with g = dy γ, x̂ = (x − mean) rstd.
void layer_norm_backward_dx(DType dt, const void* x, const void* gamma, const void* mean, const void* rstd,
                            const void* dy, void* dx, Index rows, Index cols, bool accumulate,
                            cudaStream_t stream);
// dgamma[c] += Σ_r dy x̂, dbeta[c] += Σ_r dy.
void layer_norm_backward_params(DType dt, const void* x, const void* mean, const void* rstd, const void* dy,
                                void* dgamma, void* dbeta, Index rows, Index cols, cudaStream_t stream);

}  // namespace spsim::rt::cuda_detail
