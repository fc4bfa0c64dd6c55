// CudaDevice attention ops: masked softmax (+ backward), attention block forward/backward, merge.
//
// The attention block is a composition (device.hpp gives the formulas): per chunk of query batches
//   forward:  S = scale q kᵀ (cuBLAS, acc type) → P = softmax(S), lse (row kernel) → o = P v (cuBLAS)
//   backward: S = scale q kᵀ, dP = do vᵀ, D = rowsum(do ⊙ o); P = exp(S − lse), dS = P ⊙ (dP − D);
//             dq += scale dS k, dk += scale dSᵀ q, dv += Pᵀ do (GQA sums through batched_gemm).
// Chunks hold whole GQA groups, so each chunk of q maps onto a contiguous range of k/v batches.
#include <algorithm>
#include <limits>
#include <string>

#include "runtime/cuda/detail/check.hpp"
#include "runtime/cuda/detail/state.hpp"

namespace spsim::rt {

using cuda_detail::Index;
using cuda_detail::MatRef;

namespace {

struct DeviceMaskBuffer {
  std::shared_ptr<cuda_detail::CudaStorage> positions;  // rows then cols, int64
  cuda_detail::DeviceMask mask;
};

DeviceMaskBuffer upload_mask(const CudaDevice::State& s, const Mask& mask, Index rows, Index cols,
                             const char* what) {
  DeviceMaskBuffer out;
  if (!mask.masked()) return out;
  if (mask.bounded())
    throw RuntimeError(std::string(what) +
                       ": the CUDA backend supports causal and full masks; document and window masks run "
                       "on the cpu and trace backends");
  if (!mask.rows || !mask.cols || static_cast<Index>(mask.rows->size()) != rows ||
      static_cast<Index>(mask.cols->size()) != cols)
    throw RuntimeError(std::string(what) + ": a causal mask needs " + std::to_string(rows) + " row and " +
                       std::to_string(cols) + " column positions");
  // Pageable host memory: cudaMemcpyAsync has staged the source when it returns, so the expanded lists
  // may go out of scope after the calls.
  const std::vector<Index> row_pos = mask.rows->expand(), col_pos = mask.cols->expand();
  const std::size_t bytes = static_cast<std::size_t>(rows + cols) * sizeof(Index);
  out.positions = s.scratch(bytes);
  auto* dev = static_cast<Index*>(out.positions->data());
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(dev, row_pos.data(), static_cast<std::size_t>(rows) * sizeof(Index),
                                   cudaMemcpyHostToDevice, s.stream));
  SPSIM_CUDA_CHECK(cudaMemcpyAsync(dev + rows, col_pos.data(), static_cast<std::size_t>(cols) * sizeof(Index),
                                   cudaMemcpyHostToDevice, s.stream));
  out.mask = {true, dev, dev + rows};
  return out;
}

// Rows/cols of a [batch, rows, cols] or [rows, cols] tensor for the row kernels.
struct RowView {
  Index batch = 1, rows = 1, cols = 0;
};
RowView row_view(const Tensor& t, const char* what) {
  if (t.ndim() < 1) throw RuntimeError(std::string(what) + ": scalar tensor");
  RowView v;
  v.cols = t.dim(-1);
  v.rows = t.ndim() >= 2 ? t.dim(-2) : 1;
  v.batch = v.rows * v.cols == 0 ? 0 : t.numel() / (v.rows * v.cols);
  return v;
}

void require_shape(const Tensor& t, const Shape& want, const char* what) {
  if (t.shape() != want)
    throw RuntimeError(std::string("attention: ") + what + " is " + to_string(t.shape()) + ", expected " +
                       to_string(want));
}

// The attention operands' sizes, validated once.
struct AttnDims {
  Index bq, bk, sq, sk, d, dv;
  [[nodiscard]] Index group() const { return bq / bk; }
};
AttnDims attn_dims(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& lse) {
  if (q.ndim() != 3 || k.ndim() != 3 || v.ndim() != 3)
    throw RuntimeError("attention: q, k, v must be 3-D [batch, seq, dim]");
  const AttnDims a{q.dim(0), k.dim(0), q.dim(1), k.dim(1), q.dim(2), v.dim(2)};
  if (a.bk == 0 || a.bq % a.bk)
    throw RuntimeError("attention: q batch " + std::to_string(a.bq) + " not a multiple of k batch " +
                       std::to_string(a.bk));
  require_shape(k, {a.bk, a.sk, a.d}, "k");
  require_shape(v, {a.bk, a.sk, a.dv}, "v");
  require_shape(o, {a.bq, a.sq, a.dv}, "o");
  if (lse.numel() != a.bq * a.sq)
    throw RuntimeError("attention: lse is " + to_string(lse.shape()) + ", expected " +
                       std::to_string(a.bq * a.sq) + " values");
  return a;
}

// Query batches per chunk: whole GQA groups whose scratch fits the workspace (at least one group).
Index chunk_batches(const AttnDims& a, std::size_t per_batch_bytes, std::size_t workspace) {
  const Index g = a.group();
  const Index fit = per_batch_bytes == 0 ? a.bq : static_cast<Index>(workspace / per_batch_bytes);
  return std::clamp<Index>(fit / g * g, g, a.bq);
}

}  // namespace

void CudaDevice::softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) {
  cuda_detail::OpScope scope(*s_, OpClass::softmax);
  if (x.shape() != y.shape())
    throw RuntimeError("softmax: y " + to_string(y.shape()) + " vs x " + to_string(x.shape()));
  const RowView rv = row_view(x, "softmax");
  const auto m = upload_mask(*s_, mask, rv.rows, rv.cols, "softmax");
  cuda_detail::softmax_rows(s_->dtype, s_->dtype, s_->ptr(x, "softmax x"), s_->ptr(y, "softmax y"), nullptr,
                            rv.batch, rv.rows, rv.cols, scale, m.mask, s_->stream);
}

void CudaDevice::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) {
  cuda_detail::OpScope scope(*s_, OpClass::softmax);
  if (y.shape() != dy.shape() || y.shape() != dx.shape())
    throw RuntimeError("softmax_backward: shapes differ: y " + to_string(y.shape()) + ", dy " +
                       to_string(dy.shape()) + ", dx " + to_string(dx.shape()));
  const RowView rv = row_view(y, "softmax_backward");
  cuda_detail::softmax_backward_rows(s_->dtype, s_->ptr(y, "y"), s_->ptr(dy, "dy"), s_->ptr(dx, "dx"),
                                     rv.batch * rv.rows, rv.cols, scale, s_->stream);
}

void CudaDevice::attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                         Tensor& lse, double scale, const Mask& mask) {
  cuda_detail::OpScope scope(*s_, OpClass::attention_forward);
  const AttnDims a = attn_dims(q, k, v, o, lse);
  void* po = s_->ptr(o, "o");
  void* plse = s_->ptr(lse, "lse");
  const DType t = s_->dtype, acc = cuda_detail::acc_dtype(t);
  if (a.sk == 0 || (mask.masked() && mask.unmasked_fraction() == 0.0)) {  // nothing visible: o = 0, lse = −inf
    cuda_detail::fill(t, po, o.numel(), 0.0, s_->stream);
    cuda_detail::fill(t, plse, lse.numel(), -std::numeric_limits<double>::infinity(), s_->stream);
    return;
  }
  const auto m = upload_mask(*s_, mask, a.sq, a.sk, "attention_block_forward");
  const std::size_t scores = static_cast<std::size_t>(a.sq * a.sk);
  const std::size_t per_batch = scores * (dtype_bytes(acc) + (t == acc ? 0 : dtype_bytes(t)));
  const Index nb = chunk_batches(a, per_batch, s_->attention_workspace_bytes);
  auto s_buf = s_->scratch(static_cast<std::size_t>(nb) * scores * dtype_bytes(acc));
  auto p_buf = t == acc ? s_buf : s_->scratch(static_cast<std::size_t>(nb) * scores * dtype_bytes(t));
  const auto* pq = static_cast<const char*>(s_->ptr(q, "q"));
  const auto* pk = static_cast<const char*>(s_->ptr(k, "k"));
  const auto* pv = static_cast<const char*>(s_->ptr(v, "v"));
  const std::size_t es = dtype_bytes(t);
  for (Index b0 = 0; b0 < a.bq; b0 += nb) {
    const Index n = std::min(nb, a.bq - b0), kb0 = b0 / a.group();
    const MatRef qm{pq + b0 * a.sq * a.d * es, n, a.sq, a.d};
    const MatRef km{pk + kb0 * a.sk * a.d * es, n / a.group(), a.sk, a.d};
    const MatRef vm{pv + kb0 * a.sk * a.dv * es, n / a.group(), a.sk, a.dv};
    cuda_detail::batched_gemm(*s_, t, acc, qm, km, s_buf->data(), n, Trans::N, Trans::T, scale, 0.0);
    cuda_detail::softmax_rows(acc, t, s_buf->data(), p_buf->data(), static_cast<char*>(plse) + b0 * a.sq * es,
                              n, a.sq, a.sk, 1.0, m.mask, s_->stream);
    cuda_detail::batched_gemm(*s_, t, t, {p_buf->data(), n, a.sq, a.sk}, vm,
                              static_cast<char*>(po) + b0 * a.sq * a.dv * es, n, Trans::N, Trans::N, 1.0,
                              0.0);
  }
}

void CudaDevice::attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                          const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk,
                                          Tensor& dv, double scale, const Mask& mask) {
  cuda_detail::OpScope scope(*s_, OpClass::attention_backward);
  const AttnDims a = attn_dims(q, k, v, o, lse);
  require_shape(d_o, o.shape(), "do");
  require_shape(dq, q.shape(), "dq");
  require_shape(dk, k.shape(), "dk");
  require_shape(dv, v.shape(), "dv");
  if (a.sk == 0 || a.sq == 0 || (mask.masked() && mask.unmasked_fraction() == 0.0)) return;  // adds nothing
  const DType t = s_->dtype, acc = cuda_detail::acc_dtype(t);
  const std::size_t es = dtype_bytes(t), acc_es = dtype_bytes(acc);
  const auto m = upload_mask(*s_, mask, a.sq, a.sk, "attention_block_backward");
  const auto* pq = static_cast<const char*>(s_->ptr(q, "q"));
  const auto* pk = static_cast<const char*>(s_->ptr(k, "k"));
  const auto* pv = static_cast<const char*>(s_->ptr(v, "v"));
  const auto* pdo = static_cast<const char*>(s_->ptr(d_o, "do"));
  const auto* plse = static_cast<const char*>(s_->ptr(lse, "lse"));
  auto* pdq = static_cast<char*>(s_->ptr(dq, "dq"));
  auto* pdk = static_cast<char*>(s_->ptr(dk, "dk"));
  auto* pdv = static_cast<char*>(s_->ptr(dv, "dv"));

  auto dsum = s_->scratch(static_cast<std::size_t>(a.bq * a.sq) * acc_es);  // D = rowsum(do ⊙ o)
  cuda_detail::row_dot(t, pdo, s_->ptr(o, "o"), dsum->data(), a.bq * a.sq, a.dv, s_->stream);

  const std::size_t scores = static_cast<std::size_t>(a.sq * a.sk);
  const std::size_t per_batch = 2 * scores * (acc_es + (t == acc ? 0 : es));
  const Index nb = chunk_batches(a, per_batch, s_->attention_workspace_bytes);
  auto s_buf = s_->scratch(static_cast<std::size_t>(nb) * scores * acc_es);
  auto dp_buf = s_->scratch(static_cast<std::size_t>(nb) * scores * acc_es);
  auto p_buf = t == acc ? s_buf : s_->scratch(static_cast<std::size_t>(nb) * scores * es);
  auto ds_buf = t == acc ? dp_buf : s_->scratch(static_cast<std::size_t>(nb) * scores * es);
  const Index g = a.group();
  for (Index b0 = 0; b0 < a.bq; b0 += nb) {
    const Index n = std::min(nb, a.bq - b0), kb0 = b0 / g;
    const MatRef qm{pq + b0 * a.sq * a.d * es, n, a.sq, a.d};
    const MatRef dom{pdo + b0 * a.sq * a.dv * es, n, a.sq, a.dv};
    const MatRef km{pk + kb0 * a.sk * a.d * es, n / g, a.sk, a.d};
    const MatRef vm{pv + kb0 * a.sk * a.dv * es, n / g, a.sk, a.dv};
    const MatRef pm{p_buf->data(), n, a.sq, a.sk}, dsm{ds_buf->data(), n, a.sq, a.sk};
    cuda_detail::batched_gemm(*s_, t, acc, qm, km, s_buf->data(), n, Trans::N, Trans::T, scale, 0.0);
    cuda_detail::batched_gemm(*s_, t, acc, dom, vm, dp_buf->data(), n, Trans::N, Trans::T, 1.0, 0.0);
    cuda_detail::attention_grad_scores(t, s_buf->data(), dp_buf->data(), plse + b0 * a.sq * es,
                                       static_cast<const char*>(dsum->data()) + b0 * a.sq * acc_es,
                                       p_buf->data(), ds_buf->data(), n, a.sq, a.sk, m.mask, s_->stream);
    cuda_detail::batched_gemm(*s_, t, t, dsm, km, pdq + b0 * a.sq * a.d * es, n, Trans::N, Trans::N, scale,
                              1.0);
    cuda_detail::batched_gemm(*s_, t, t, dsm, qm, pdk + kb0 * a.sk * a.d * es, n / g, Trans::T, Trans::N,
                              scale, 1.0);
    cuda_detail::batched_gemm(*s_, t, t, pm, dom, pdv + kb0 * a.sk * a.dv * es, n / g, Trans::T, Trans::N,
                              1.0, 1.0);
  }
}

void CudaDevice::merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  if (o.shape() != o_blk.shape() || lse.numel() != lse_blk.numel() || o.ndim() < 1 ||
      lse.numel() * o.dim(-1) != o.numel())
    throw RuntimeError("merge_attention: o " + to_string(o.shape()) + ", lse " + to_string(lse.shape()) +
                       ", o_blk " + to_string(o_blk.shape()) + ", lse_blk " + to_string(lse_blk.shape()));
  cuda_detail::merge_attention(s_->dtype, s_->ptr(o, "o"), s_->ptr(lse, "lse"), s_->ptr(o_blk, "o_blk"),
                               s_->ptr(lse_blk, "lse_blk"), lse.numel(), o.dim(-1), s_->stream);
}

}  // namespace spsim::rt
