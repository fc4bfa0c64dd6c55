// Device: the fixed vocabulary of tensor ops every strategy is written against (DESIGN.md §4).
//
// Conventions shared by every backend (cpu, cuda, trace):
//  * Tensors are row-major and contiguous. "Batched" 3-D tensors are [batch, rows, cols].
//  * Batch broadcasting (GQA): in gemm and the attention ops an operand whose batch count is smaller
//    than the op's batch count N is shared: batch i of the op reads batch i / (N / batch_x) of x.
//    (With q = [B*H, s, d] and k = [B*Hkv, s, d] this maps query head h of sample b to kv head
//    h / (H/Hkv) of sample b.) An output with a smaller batch count receives the SUM over the batches
//    that map to it (used for dK/dV of GQA).
//  * Ops write into caller-allocated outputs; `accumulate` / `beta` add into existing contents.
//    Elementwise ops (add, scale, gelu*, swiglu*) allow the output to alias an input.
//  * Masks are built from global token positions, so causal, document and window masks are right for
//    any layout.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/mask_bounds.hpp"
#include "runtime/core/positions.hpp"
#include "runtime/tensor.hpp"

namespace spsim::rt {

enum class Trans : std::uint8_t { N, T };

// Attention mask from global token positions: with `causal`, query row r may attend key column c
// iff cols[c] <= rows[r]; `bounds` (documents, a sliding window; runtime/core/mask_bounds.hpp) restrict
// that further. Without `causal` and bounds every pair is allowed and rows/cols may be null.
struct Mask {
  bool causal = false;
  const Positions* rows = nullptr;      // global position of each query row
  const Positions* cols = nullptr;      // global position of each key column
  const MaskBounds* bounds = nullptr;   // nullptr or inactive: no bounds

  // Some pair may be masked: rows and cols are needed.
  [[nodiscard]] bool masked() const { return causal || bounded(); }
  // Bounds beyond causality (documents or a window).
  [[nodiscard]] bool bounded() const { return bounds != nullptr && bounds->active(); }
  [[nodiscard]] bool allowed(std::int64_t r, std::int64_t c) const {
    if (!masked()) return true;
    const std::int64_t q = (*rows)[r], k = (*cols)[c];
    return (!causal || k <= q) && (!bounded() || bounds->allows(q, k));
  }
  // Fraction of (row, col) pairs that are allowed: 1 when unmasked; 0 means the block is skipped.
  // Counted on the positions' runs (allowed_pairs), so a block of any size costs O(runs); throws for a
  // masked block without positions.
  [[nodiscard]] double unmasked_fraction() const;
};

class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual DType dtype() const = 0;  // element type this device computes in

  // ---- memory --------------------------------------------------------------------------------
  [[nodiscard]] virtual Tensor empty(const Shape& shape) = 0;  // uninitialised
  [[nodiscard]] Tensor zeros(const Shape& shape);
  [[nodiscard]] Tensor empty_like(const Tensor& t) { return empty(t.shape()); }
  // A buffer that sums partial results over steps (Ring Attention's dq and the dK/dV accumulators
  // that travel the ring): accumulator_dtype(dtype()), fp32 where the device computes in a narrower
  // type, as ring implementations
  // keep them (ring-flash-attention holds dq, dk and dv in torch.float32 and sends dk, dv so). fill,
  // copy (which converts), add and attention_block_backward's gradients take it beside tensors of
  // dtype(), and communication moves its own bytes. This default is empty(shape): the CPU backends
  // compute at their own precision, and the CUDA backend (bf16 kernels with fp32 accumulation inside
  // them) keeps the ring's dK/dV sums in bf16 and sends them so, half the bytes the trace predicts.
  [[nodiscard]] virtual Tensor empty_accumulator(const Shape& shape) { return empty(shape); }
  // Room for a byte per element of an n-element tensor (a dropout mask), in elements of dtype().
  [[nodiscard]] Tensor empty_mask(std::int64_t n);
  // The checks every device's dropout makes: 0 <= p < 1, and room in `mask` for a byte per element of
  // an n-element tensor; RuntimeError naming `op` otherwise.
  static void check_dropout(std::string_view op, double p, const Tensor& mask, std::int64_t n);
  virtual void fill(Tensor& t, double value) = 0;
  // Host <-> device. Data-less backends (trace) accept and ignore values and return zeros from to_host.
  [[nodiscard]] virtual Tensor from_host(std::span<const double> values, const Shape& shape) = 0;
  [[nodiscard]] virtual std::vector<double> to_host(const Tensor& t) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;  // same numel

  // ---- linear algebra ------------------------------------------------------------------------
  // c = alpha * op(a) @ op(b) + beta * c, batched over dim 0 of 3-D tensors (2-D = batch 1),
  // with the batch broadcasting described at the top of this file.
  virtual void gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha = 1.0,
                    double beta = 0.0) = 0;

  // ---- attention pieces ----------------------------------------------------------------------
  // y = softmax over the last dim of (scale * x), masked entries get probability 0; a fully masked
  // row gives all zeros. x, y: [batch, rows, cols]; the mask applies to (row, col) of every batch.
  virtual void softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) = 0;
  // dx = scale * y ⊙ (dy − rowsum(dy ⊙ y)): the gradient w.r.t. x of the softmax above.
  virtual void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) = 0;

  // Flash-attention style block: o = softmax(scale q kᵀ, mask) v, lse = log Σ_c exp(scale q·k_c)
  // over allowed c (−inf and o = 0 for a fully masked row). q: [Bq, sq, d], k, v: [Bk, sk, d] with
  // Bq % Bk == 0; o: [Bq, sq, d]; lse: [Bq, sq]. A fully masked block costs nothing.
  virtual void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                       Tensor& lse, double scale, const Mask& mask) = 0;
  // Gradients of the block given the FINAL o and lse of the rows (as flash-attention's backward):
  // p = exp(scale q kᵀ − lse), D = rowsum(do ⊙ o), ds = p ⊙ (do vᵀ − D);
  // dq += scale ds k, dk += scale dsᵀ q, dv += pᵀ do (summed over broadcast batches).
  // Always accumulates into dq, dk, dv.
  virtual void attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                        const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk,
                                        Tensor& dv, double scale, const Mask& mask) = 0;
  // Online-softmax merge of a block result into an accumulator (o, lse) in place:
  // lse' = log(e^lse + e^lse_blk); o' = e^(lse−lse') o + e^(lse_blk−lse') o_blk (−inf handled).
  virtual void merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) = 0;

  // ---- elementwise and layout ----------------------------------------------------------------
  virtual void add(const Tensor& a, const Tensor& b, Tensor& out, double alpha = 1.0, double beta = 1.0) = 0;
  virtual void scale(Tensor& x, double alpha) = 0;  // x *= alpha
  // Inverted dropout (Srivastava et al. 2014): y = residual + keep ⊙ x / (1 − p), keep drawn per
  // element from `seed` (runtime/core/dropout_mask.hpp) and written to `mask`, a byte per element of x
  // (empty_mask(x.numel())), which the backward reads, as PyTorch keeps a bool tensor; residual may be
  // undefined (y = the dropped x). With a residual it is Megatron-LM's fused bias-dropout-add. 0 <= p < 1.
  virtual void dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
                       std::uint64_t seed) = 0;
  // dx = keep ⊙ dy / (1 − p), keep read from the forward's mask.
  virtual void dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) = 0;
  [[nodiscard]] virtual Tensor slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) = 0;
  // dst[..., start:start+len, ...] (= or +=) src along `dim`.
  virtual void slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src,
                            bool accumulate = false) = 0;
  [[nodiscard]] virtual Tensor concat(std::span<const Tensor> parts, int dim) = 0;
  // out.shape[i] = x.shape[perm[i]] (as torch.permute followed by contiguous()).
  [[nodiscard]] virtual Tensor permute(const Tensor& x, std::span<const int> perm) = 0;

  // ---- transformer layer ops (x: [rows, in]) -------------------------------------------------
  // y = x wᵀ + b; w: [out, in], b: [out] or undefined.
  virtual void linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  // dx = dy w (skipped if dx undefined; += if accumulate), dw += dyᵀ x, db += Σ_rows dy (if defined).
  // fp32_dw: dw stands for an fp32 main-gradient buffer that the dW GEMM accumulates into (Megatron-LM's
  // gradient accumulation fusion): a backend whose tensors all have one dtype computes as usual; the
  // trace device prices the GEMM's fp32 read and write of it.
  virtual void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                               Tensor& db, bool accumulate_dx = false, bool fp32_dw = false) = 0;
  // y = (x − mean) * rstd * gamma + beta over the last dim; mean, rstd: [rows] saved for backward.
  virtual void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                          Tensor& mean, Tensor& rstd) = 0;
  // dx = (or += when accumulate_dx); dgamma += ; dbeta += .
  virtual void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                   Tensor& dbeta, bool accumulate_dx = false) = 0;
  // Exact GeLU: y = x Φ(x) = 0.5 x (1 + erf(x / √2)); backward dx = dy (Φ(x) + x φ(x)).
  virtual void gelu(const Tensor& x, Tensor& y) = 0;
  virtual void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) = 0;
  // SwiGLU's gate (Shazeer 2020, "GLU Variants Improve Transformer"): y = silu(gate) ⊙ up, silu(u) =
  // u σ(u). Backward: dgate = dy ⊙ up ⊙ σ(u)(1 + u(1 − σ(u))), dup = dy ⊙ silu(u). All one shape.
  virtual void swiglu(const Tensor& gate, const Tensor& up, Tensor& y) = 0;
  virtual void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                               Tensor& dup) = 0;

  // ---- annotations ---------------------------------------------------------------------------
  // Phase markers ("forward", "backward", ...): timing backends time them, trace records them.
  virtual void begin_phase(std::string_view /*name*/) {}
  virtual void end_phase(std::string_view /*name*/) {}
  // Block until all queued work is done (GPU streams); a no-op on synchronous backends.
  virtual void synchronize() {}
};

// RAII phase marker.
class PhaseScope {
 public:
  PhaseScope(Device& dev, std::string_view name) : dev_(dev), name_(name) { dev_.begin_phase(name_); }
  ~PhaseScope() { dev_.end_phase(name_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  Device& dev_;
  std::string_view name_;
};

}  // namespace spsim::rt
