// Cost of each Device op: FLOPs and bytes read/written from shapes, dtype and mask (backend-independent).
//
// Used by the trace backend (what the simulator's compute model replays) and by benchmarks (effective
// GFLOP/s). Conventions:
//  * flops counts multiplies and adds separately (a fused multiply-add is 2 flops), as GEMM GFLOP/s
//    are quoted by vendors and by the flash-attention papers.
//  * bytes are what an ideal kernel moves to and from memory: each operand read once, each output
//    written once (tiling re-reads and caches are the compute model's efficiency factor, not ours).
//    An output that is accumulated into (beta != 0, `+=`) is also read. Bytes use the dtype's size.
//  * Elementwise flop counts are per element and deliberately round ("a few"): these ops are memory
//    bound, their time comes from bytes, so the constants only need the right order of magnitude.
//  * A fully masked attention block is skipped by every backend: its cost is all zeros.
//
// The shape helpers (gemm_dims, attention_dims) validate operands the way every backend must and
// throw RuntimeError on a mismatch, so backends can share them.
#pragma once

#include <cstdint>

#include "runtime/core/kernel_shape.hpp"
#include "runtime/device.hpp"
#include "runtime/tensor.hpp"

namespace spsim::rt {

struct OpCost {
  OpClass op_class = OpClass::elementwise;
  double flops = 0;                 // floating-point operations
  std::uint64_t bytes_read = 0;     // bytes
  std::uint64_t bytes_written = 0;  // bytes
  KernelShapes kernels{};           // the launches the kernel models price (runtime/core/kernel_shape.hpp)
  [[nodiscard]] std::uint64_t bytes() const { return bytes_read + bytes_written; }
};

// Batch, rows and cols of a 2-D ([rows, cols], batch 1) or 3-D ([batch, rows, cols]) operand.
struct Matrix3 {
  std::int64_t batch = 1, rows = 0, cols = 0;
};
[[nodiscard]] Matrix3 as_matrix3(const Shape& shape, const char* what);  // throws unless 2-D or 3-D

// Resolved gemm problem: op(a) is [m, k], op(b) is [k, n], c is [m, n]; batch = max of the operand
// batches, and every operand batch divides it (the broadcasting rule of runtime/device.hpp).
using GemmDims = GemmShape;
[[nodiscard]] GemmDims gemm_dims(const Shape& a, const Shape& b, const Shape& c, Trans ta, Trans tb);

// Resolved attention block: q [bq, sq, d], k [bk, sk, d], v [bk, sk, dv]; bq % bk == 0.
struct AttentionDims {
  std::int64_t bq = 1, bk = 1, sq = 0, sk = 0, d = 0, dv = 0;
};
[[nodiscard]] AttentionDims attention_dims(const Shape& q, const Shape& k, const Shape& v);
// Throws unless a causal mask has row/column positions of lengths sq and sk.
void check_mask(const Mask& mask, std::int64_t sq, std::int64_t sk);
// The fused-attention launch an implementation makes for block `a` under `mask` (visible fraction
// `fraction`, from Mask::unmasked_fraction), the way flash-attention based ring implementations launch it:
//  * positions of rows and of columns each one arithmetic progression with one stride s (contiguous:
//    s = 1; striped: s = P): one kernel; causal offset floor((r0 − c0)/s), none when every key precedes
//    every query. flash-attention's causal mask is bottom-right aligned (offset sk − sq); another
//    offset (striped, a later owner: −1) is run on the views q[1:], k[:-1], v[:-1], for which it is
//    (flash-attention takes operands strided in all but the last dimension: nothing is copied);
//  * several runs (zigzag's two chunks; all-gather-KV's gathered keys, its owners' chunks in rank
//    order): runs that see nothing are dropped (a half block, the keys after a rank's last query);
//    what is left is unmasked, or causal when rows and columns are the same ascending positions (the
//    own block), or else priced as an even `fraction` of a full block.
[[nodiscard]] AttentionLaunch attention_launch(const AttentionDims& a, const Mask& mask, double fraction);

namespace cost {

// gemm: c = alpha op(a) op(b) + beta c. Each of the batch·m·n outputs is a k-long dot product:
// k multiplies + k adds → flops = 2·m·n·k·batch (the alpha/beta scaling, O(m·n), is neglected).
// Reads a, b (a broadcast operand once) and c when beta != 0; writes c.
[[nodiscard]] OpCost gemm(const Shape& a, const Shape& b, const Shape& c, Trans ta, Trans tb, DType dt,
                          bool reads_c);

// attention_block_forward: S = q kᵀ is 2·sq·sk·d flops, O = P v is 2·sq·sk·dv flops, per query batch
// → (2·d + 2·dv)·sq·sk·bq = 4·sq·sk·d·bq when dv = d (FlashAttention-2 paper, Dao 2023, §4.1,
// which also neglects the softmax's O(sq·sk) work). Scaled by the mask's unmasked fraction (the
// kernel skips masked tiles); fraction 0 → zero cost. Reads q, k, v; writes o and lse ([bq, sq]).
[[nodiscard]] OpCost attention_forward(const Shape& q, const Shape& k, const Shape& v, DType dt,
                                       const Mask& mask);

// attention_block_backward: five GEMMs, each 2·sq·sk·(d or dv) per query batch — recompute
// S = q kᵀ, dV = Pᵀ dO, dP = dO vᵀ, dQ = dS k, dK = dSᵀ q → (6·d + 4·dv)·sq·sk·bq = 10·sq·sk·d·bq,
// 2.5× the forward (the FlashAttention-2 paper's backward/forward ratio). Times the unmasked
// fraction. Reads q, k, v, o, dO, lse and the accumulated dq, dk, dv; writes dq, dk, dv.
// Its kernels: D = rowsum(dO∘O), the main one, the dQ conversion (and the GQA reduction of dK/dV),
// their bytes in the launch's aux_bytes. `accumulated` lists which of dq, dk, dv already hold earlier
// blocks' contributions: a fused kernel overwrites its outputs, so each of those is added into its
// gradient by a pass of its own, into an fp32 accumulator as ring implementations keep them
// (ring-flash-attention's dq += block_dq): reads the block's dtype and fp32, writes fp32.
struct Accumulated {
  bool dq = false, dk = false, dv = false;
};
[[nodiscard]] OpCost attention_backward(const Shape& q, const Shape& k, const Shape& v, DType dt,
                                        const Mask& mask, Accumulated accumulated = {});

// softmax over the last dim of scale·x: per element scale (1), max (1), subtract (1), exp (1), sum
// (1), divide (1) → 6 flops/elt. The mask only zeroes entries, the kernel still visits every one.
// Reads x, writes y.
[[nodiscard]] OpCost softmax(const Shape& x, DType dt);
// dx = scale·y ⊙ (dy − rowsum(dy ⊙ y)): product (1), row sum (1), subtract (1), product (1),
// scale (1) → 5 flops/elt. Reads y, dy; writes dx.
[[nodiscard]] OpCost softmax_backward(const Shape& y, DType dt);

// merge_attention: per row, lse' = log(e^lse + e^lse_blk) and the two weights e^(lse−lse'),
// e^(lse_blk−lse') → 2 exp + add + log + 2 (sub, exp) ≈ 8 flops/row; per element of o two
// products and a sum → 3 flops/elt. Reads o, lse, o_blk, lse_blk; writes o, lse.
//
// As ring implementations merge (ring-flash-attention's update_out_and_lse, Megatron-CP): o is kept in
// fp32 and merged by PyTorch elementwise kernels: cast o_blk to fp32 (2 + 4 bytes/elt),
// o − o_blk (12), sigmoid(lse_blk − lse)·(…) (8), o − (…) (12) → 38 bytes per element of o, and
// three kernels on lse (8 bytes per row each): six launches. Only the `rows` fraction of the rows the
// block touched is merged (a zigzag half block updates half of o), and such a sliced merge copies its
// result back into o (8 bytes per element more). flops as above.
[[nodiscard]] OpCost merge_attention(const Shape& o, DType dt, double rows = 1);

// out = alpha·a + beta·b: 2 products + 1 sum → 3 flops/elt; reads a, b; writes out.
[[nodiscard]] OpCost add(const Shape& out, DType dt);
// The same with operands of their own types (a block's dtype gradient added into an fp32
// accumulator, Device::empty_accumulator): reads a and b at their widths, writes out at its own.
[[nodiscard]] OpCost add(const Shape& out, DType a, DType b, DType out_dt);
// x *= alpha: 1 flop/elt; reads and writes x.
[[nodiscard]] OpCost scale(const Shape& x, DType dt);
// fill: 0 flops; writes x.
[[nodiscard]] OpCost fill(const Shape& x, DType dt);
// copy, slice, concat, permute: 0 flops; reads and writes `moved` (the output's shape).
[[nodiscard]] OpCost copy(const Shape& moved, DType dt);
// A copy that converts (an fp32 accumulator to the dtype, or back): reads `from`, writes `to` widths.
[[nodiscard]] OpCost convert(const Shape& moved, DType from, DType to);
// dst[slice] (= or +=) src: a copy of src, or with accumulate 1 flop/elt and the slice also read.
[[nodiscard]] OpCost slice_assign(const Shape& src, DType dt, bool accumulate);

// linear y = x wᵀ + b, x [rows, in], w [out, in]: a gemm, 2·rows·in·out flops, plus rows·out adds
// for the bias. Reads x, w, b; writes y.
[[nodiscard]] OpCost linear(const Shape& x, const Shape& w, bool bias, DType dt);
// linear backward: dx = dy w is 2·rows·out·in (if dx is wanted), dw += dyᵀ x is 2·out·rows·in
// (+ out·in for the accumulate), db += Σ_rows dy is rows·out. Reads x, w, dy, dw, db (and dx when
// accumulating); writes dx, dw, db. Kernels: the two GEMMs and, with a bias, the reduction of dy over
// its rows, a kernel of its own that reads dy again (KernelShapes::aux_bytes = dy + db). fp32_dw: dw is
// an fp32 main-gradient buffer (Megatron-LM's gradient accumulation fusion): the dW GEMM's epilogue
// reads and writes 4-byte elements (GemmShape::c_bytes = 8), and the op's bytes count them; with a dtype
// of 4 bytes or more it changes nothing (the gradient already has that precision).
[[nodiscard]] OpCost linear_backward(const Shape& x, const Shape& w, bool dx, bool bias, bool accumulate_dx,
                                     DType dt, bool fp32_dw = false);

// layer_norm over the last dim: mean (1 add), variance (sub, square, add: 3), normalise (sub, mul:
// 2), affine (mul, add: 2) → 8 flops/elt (rstd per row neglected). Reads x, gamma, beta; writes y,
// mean, rstd ([rows] each).
[[nodiscard]] OpCost layer_norm(const Shape& x, DType dt);
// layer_norm backward: x̂ = (x−mean)·rstd (2), g = dy·gamma (1), dgamma += dy·x̂ (2), dbeta += dy (1),
// the two row means of g and g·x̂ (3), dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) (4) → 13 flops/elt.
// Reads x, dy, gamma, mean, rstd, dgamma, dbeta (and dx when accumulating); writes dx, dgamma, dbeta.
[[nodiscard]] OpCost layer_norm_backward(const Shape& x, DType dt, bool accumulate_dx);

// gelu y = 0.5·x·(1 + erf(x/√2)): erf as a rational/polynomial approximation ≈ 6, the scaling,
// sum and two products ≈ 4 → 10 flops/elt. Reads x, writes y.
[[nodiscard]] OpCost gelu(const Shape& x, DType dt);
// gelu backward dx = dy·(Φ(x) + x·φ(x)): Φ as above ≈ 8, φ = exp(−x²/2)/√(2π) ≈ 4, x·φ + Φ (2),
// times dy (1) → 15 flops/elt. Reads x, dy; writes dx.
[[nodiscard]] OpCost gelu_backward(const Shape& x, DType dt);
// dropout y = residual + keep ⊙ x / (1 − p): the counter hash of dropout_mask.hpp (≈ 10 integer ops,
// counted as flops), the compare, the scaling and the add → 13 flops/elt. Reads x (and the residual);
// writes y and the keep mask, one byte per element (PyTorch's bool mask, saved for the backward).
[[nodiscard]] OpCost dropout(const Shape& x, DType dt, bool residual);
// dropout backward dx = keep ⊙ dy / (1 − p): 2 flops/elt. Reads dy and the byte mask; writes dx.
[[nodiscard]] OpCost dropout_backward(const Shape& x, DType dt);
// swiglu y = u σ(u) · v: σ = 1/(1 + exp(−u)) ≈ 4 (exp ≈ 2, add, divide), two products → 6 flops/elt.
// Reads gate and up, writes y.
[[nodiscard]] OpCost swiglu(const Shape& x, DType dt);
// swiglu backward: σ(u) ≈ 4, silu = u σ (1), dup = dy·silu (1), σ(1 + u(1 − σ)) (3), dgate = dy·up·(…)
// (2) → 11 flops/elt. Reads gate, up, dy; writes dgate, dup.
[[nodiscard]] OpCost swiglu_backward(const Shape& x, DType dt);

}  // namespace cost
}  // namespace spsim::rt
