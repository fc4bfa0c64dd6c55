// FLOP and byte accounting of Device ops, and the operand shape checks the formulas rely on.
#include "runtime/cost.hpp"

#include <algorithm>
#include <string>

namespace spsim::rt {

namespace {

[[nodiscard]] std::uint64_t bytes_of(const Shape& s, DType dt) {
  return static_cast<std::uint64_t>(numel(s)) * dtype_bytes(dt);
}
[[nodiscard]] double elems(const Shape& s) {
  return static_cast<double>(numel(s));
}

[[noreturn]] void fail(const std::string& msg) {
  throw RuntimeError(msg);
}

}  // namespace

Matrix3 as_matrix3(const Shape& s, const char* what) {
  if (s.size() == 2) return {1, s[0], s[1]};
  if (s.size() == 3) return {s[0], s[1], s[2]};
  fail(std::string(what) + " must be 2-D or 3-D, got " + to_string(s));
}

GemmDims gemm_dims(const Shape& a, const Shape& b, const Shape& c, Trans ta, Trans tb) {
  const Matrix3 ma = as_matrix3(a, "gemm: a"), mb = as_matrix3(b, "gemm: b"), mc = as_matrix3(c, "gemm: c");
  const std::int64_t m = ta == Trans::N ? ma.rows : ma.cols;
  const std::int64_t k = ta == Trans::N ? ma.cols : ma.rows;
  const std::int64_t kb = tb == Trans::N ? mb.rows : mb.cols;
  const std::int64_t n = tb == Trans::N ? mb.cols : mb.rows;
  // The operands for an error message, built only when one is thrown (traces call this per GEMM).
  const auto shapes = [&] {
    return " (a " + to_string(a) + (ta == Trans::T ? "ᵀ" : "") + ", b " + to_string(b) +
           (tb == Trans::T ? "ᵀ" : "") + ", c " + to_string(c) + ")";
  };
  if (k != kb) fail("gemm: inner dimensions differ" + shapes());
  if (mc.rows != m || mc.cols != n) fail("gemm: c is not [m, n]" + shapes());
  const std::int64_t batch = std::max({ma.batch, mb.batch, mc.batch});
  for (std::int64_t bx : {ma.batch, mb.batch, mc.batch})
    if (bx == 0 || batch % bx != 0) fail("gemm: batch counts do not divide each other" + shapes());
  return {batch, m, n, k};
}

AttentionDims attention_dims(const Shape& q, const Shape& k, const Shape& v) {
  const Matrix3 mq = as_matrix3(q, "attention: q"), mk = as_matrix3(k, "attention: k"),
                mv = as_matrix3(v, "attention: v");
  const auto shapes = [&] {
    return " (q " + to_string(q) + ", k " + to_string(k) + ", v " + to_string(v) + ")";
  };
  if (mq.cols != mk.cols) fail("attention: q and k head dims differ" + shapes());
  if (mk.batch != mv.batch || mk.rows != mv.rows) fail("attention: k and v disagree" + shapes());
  if (mk.batch == 0 || mq.batch % mk.batch != 0)
    fail("attention: q batch is not a multiple of k batch" + shapes());
  return {mq.batch, mk.batch, mq.rows, mk.rows, mq.cols, mv.cols};
}

void check_mask(const Mask& mask, std::int64_t sq, std::int64_t sk) {
  if (!mask.masked()) return;
  if (!mask.rows || !mask.cols) fail("attention mask without row/column positions");
  if (static_cast<std::int64_t>(mask.rows->size()) != sq ||
      static_cast<std::int64_t>(mask.cols->size()) != sk)
    fail("attention mask has " + std::to_string(mask.rows->size()) + " row and " +
         std::to_string(mask.cols->size()) + " column positions for a " + std::to_string(sq) + " x " +
         std::to_string(sk) + " block");
}

namespace {

using Run = Positions::Run;

}  // namespace

AttentionLaunch attention_launch(const AttentionDims& a, const Mask& mask, double fraction) {
  AttentionLaunch l{a.bq, a.bk, a.sq, a.sk, a.d, a.dv};
  if (!mask.masked() || fraction >= 1.0) return l;
  if (mask.bounded()) {
    // Documents or a window: the kernel skips the tiles outside the bounds (flash-attention's varlen
    // and window masks), which the kernel model prices as the visible fraction of the block's tiles.
    l.mask = AttentionLaunch::Mask::fraction;
    l.fraction = fraction;
    return l;
  }
  // The positions' runs (maximal arithmetic progressions; all-gather-KV's gathered keys are several
  // runs in rank order, not ascending as a whole).
  const std::vector<Run>& rows = mask.rows->runs();
  const std::vector<Run>& cols = mask.cols->runs();
  if (rows.empty() || cols.empty()) {
    l.mask = AttentionLaunch::Mask::fraction;
    l.fraction = fraction;
    return l;
  }
  if (rows.size() == 1 && cols.size() == 1 &&
      (rows[0].stride == cols[0].stride || rows[0].count == 1 || cols[0].count == 1)) {
    const std::int64_t s = rows[0].count > 1 ? rows[0].stride : cols[0].stride;
    const std::int64_t offset = floor_div(rows[0].first - cols[0].first, s);
    l.mask = AttentionLaunch::Mask::causal;
    l.offset = offset;
    const std::int64_t dropped_rows = std::max<std::int64_t>(0, -offset);  // rows i < −offset see nothing
    l.active_rows = static_cast<double>(a.sq - dropped_rows) / static_cast<double>(a.sq);
    const std::int64_t sq = a.sq - dropped_rows;
    const std::int64_t sk = std::min(a.sk, a.sq + offset);  // the keys some row sees
    if (offset != a.sk - a.sq && (sq < a.sq || sk < a.sk)) {
      // Slice to the rows that see a key and those keys (striped's later owner: the views q[1:],
      // k[:-1], v[:-1], bottom-right aligned again); another offset runs unsliced with its own mask.
      l.offset = offset + dropped_rows;
      l.sq = sq;
      l.sk = sk;
    }
    return l;
  }
  // Several runs: keep the row runs and column runs with a visible pair.
  enum class Seen { none, all, part };
  const auto seen = [](const Run& r, const Run& c) {
    if (c.first > r.last()) return Seen::none;
    if (c.last() <= r.first) return Seen::all;
    return Seen::part;
  };
  // Scratch kept per thread: a trace records this for every block of a layout with several runs (a
  // zigzag rank's two halves), and four to six allocations a block were a seventh of the producer's
  // mallocs.
  thread_local std::vector<unsigned char> row_kept, col_kept;
  thread_local std::vector<Run> kept_rows, kept_cols;
  row_kept.assign(rows.size(), 0);
  col_kept.assign(cols.size(), 0);
  kept_rows.clear();
  kept_cols.clear();
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < cols.size(); ++j)
      if (seen(rows[i], cols[j]) != Seen::none) row_kept[i] = col_kept[j] = 1;
  std::int64_t sq = 0, sk = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (row_kept[i]) sq += rows[i].count, kept_rows.push_back(rows[i]);
  for (std::size_t j = 0; j < cols.size(); ++j)
    if (col_kept[j]) sk += cols[j].count, kept_cols.push_back(cols[j]);
  // Unmasked only if every kept row run sees every kept column run whole.
  bool all_visible = true;
  for (const Run& r : kept_rows)
    for (const Run& c : kept_cols)
      if (seen(r, c) != Seen::all) all_visible = false;
  l.sq = sq;
  l.sk = sk;
  l.active_rows = static_cast<double>(sq) / static_cast<double>(a.sq);
  if (all_visible) return l;
  if (kept_rows == kept_cols && mask.rows->ascending()) {  // the same ascending positions: causal in
                                                           // the kernel's own indices
    l.mask = AttentionLaunch::Mask::causal;
    l.offset = 0;
    return l;
  }
  l.mask = AttentionLaunch::Mask::fraction;
  l.fraction = fraction * static_cast<double>(a.sq) * static_cast<double>(a.sk) /
               (static_cast<double>(sq) * static_cast<double>(sk));
  return l;
}

namespace {
// The kernels around a fused backward (flash-attention 2 and 3 alike), on the launch's rows and keys:
// D = rowsum(dO∘O) reads dO and O and writes D, clearing the fp32 dQ accumulator the main kernel adds
// into; afterwards dQ is converted to the dtype; under GQA (bq > bk) the main kernel writes dK and dV
// per query head and a reduction sums each group into its KV head (FA2's sum over the head group;
// FA3's conversion of its fp32 dK/dV accumulators moves about the same bytes). Then the accumulation
// passes (cost::Accumulated), over the rows and keys the launch kept (a zigzag half block adds into
// half of dq, or of dk and dv): per element the block's value (dtype) and the fp32 sum are read and
// the sum written.
[[nodiscard]] KernelShapes backward_kernels(AttentionLaunch l, DType dt, cost::Accumulated accumulated) {
  const auto e = static_cast<double>(dtype_bytes(dt));
  const auto rows = static_cast<double>(l.bq * l.sq);
  const double dq = rows * static_cast<double>(l.d);
  const double kv_rows = static_cast<double>(l.bk * l.sk);
  double aux = rows * (2 * e * static_cast<double>(l.dv) + 4) + 4 * dq  // D, and the dQ clear
               + (4 + e) * dq;                                          // dQ conversion
  int launches = 3;
  if (l.bq > l.bk) {
    const double kv = static_cast<double>(l.sk) * static_cast<double>(l.d + l.dv);
    aux += e * kv * static_cast<double>(l.bq + l.bk);  // read per query head, write per KV head
    launches += 2;
  }
  for (const auto& [on, elems] :
       {std::pair{accumulated.dq, dq}, std::pair{accumulated.dk, kv_rows * static_cast<double>(l.d)},
        std::pair{accumulated.dv, kv_rows * static_cast<double>(l.dv)}})
    if (on) {
      aux += (e + 8) * elems;
      ++launches;
    }
  l.aux_bytes = static_cast<std::uint64_t>(aux);
  return KernelShapes{l, {}, launches};
}
}  // namespace

namespace cost {

OpCost gemm(const Shape& a, const Shape& b, const Shape& c, Trans ta, Trans tb, DType dt, bool reads_c) {
  const GemmDims g = gemm_dims(a, b, c, ta, tb);
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                       static_cast<double>(g.batch);
  return {OpClass::gemm, flops, bytes_of(a, dt) + bytes_of(b, dt) + (reads_c ? bytes_of(c, dt) : 0),
          bytes_of(c, dt), KernelShapes{{}, {g}, 1}};
}

namespace {
// Shared by forward and backward: the per-pair flop factor differs (see the header).
[[nodiscard]] double attention_pairs(const AttentionDims& a, double fraction) {
  return static_cast<double>(a.bq) * static_cast<double>(a.sq) * static_cast<double>(a.sk) * fraction;
}
[[nodiscard]] std::uint64_t lse_bytes(const AttentionDims& a, DType dt) {
  return static_cast<std::uint64_t>(a.bq * a.sq) * dtype_bytes(dt);
}
}  // namespace

OpCost attention_forward(const Shape& q, const Shape& k, const Shape& v, DType dt, const Mask& mask) {
  const AttentionDims a = attention_dims(q, k, v);
  check_mask(mask, a.sq, a.sk);
  const double fraction = mask.unmasked_fraction();
  if (fraction == 0.0) return {OpClass::attention_forward, 0, 0, 0, KernelShapes{{}, {}, 0}};
  const double flops = attention_pairs(a, fraction) * static_cast<double>(2 * a.d + 2 * a.dv);
  const std::uint64_t o = static_cast<std::uint64_t>(a.bq * a.sq * a.dv) * dtype_bytes(dt);
  return {OpClass::attention_forward, flops, bytes_of(q, dt) + bytes_of(k, dt) + bytes_of(v, dt),
          o + lse_bytes(a, dt), KernelShapes{attention_launch(a, mask, fraction), {}, 1}};
}

OpCost attention_backward(const Shape& q, const Shape& k, const Shape& v, DType dt, const Mask& mask,
                          Accumulated accumulated) {
  const AttentionDims a = attention_dims(q, k, v);
  check_mask(mask, a.sq, a.sk);
  const double fraction = mask.unmasked_fraction();
  if (fraction == 0.0) return {OpClass::attention_backward, 0, 0, 0, KernelShapes{{}, {}, 0}};
  // S = q kᵀ, dQ = dS k, dK = dSᵀ q have a d-long side (6·d); dP = dO vᵀ, dV = Pᵀ dO a dv-long one (4·dv).
  const double flops = attention_pairs(a, fraction) * static_cast<double>(6 * a.d + 4 * a.dv);
  const std::uint64_t o = static_cast<std::uint64_t>(a.bq * a.sq * a.dv) * dtype_bytes(dt);
  const std::uint64_t grads = bytes_of(q, dt) + bytes_of(k, dt) + bytes_of(v, dt);  // dq, dk, dv
  // Reads q, k, v, o, dO, lse and the three accumulators; writes the three accumulators.
  return {OpClass::attention_backward, flops, grads + 2 * o + lse_bytes(a, dt) + grads, grads,
          backward_kernels(attention_launch(a, mask, fraction), dt, accumulated)};
}

OpCost softmax(const Shape& x, DType dt) {
  return {OpClass::softmax, 6 * elems(x), bytes_of(x, dt), bytes_of(x, dt)};
}

OpCost softmax_backward(const Shape& y, DType dt) {
  return {OpClass::softmax, 5 * elems(y), 2 * bytes_of(y, dt), bytes_of(y, dt)};
}

OpCost merge_attention(const Shape& o, DType dt, double rows) {
  if (o.empty()) fail("merge_attention: o must have at least one dimension");
  const Shape lse(o.begin(), o.end() - 1);
  const double e = static_cast<double>(dtype_bytes(dt));
  const double acc = std::max(4.0, e);  // the fp32 accumulator (or the dtype, if wider)
  const bool cast = e < 4;              // o_blk to fp32: reads e, writes acc
  const bool sliced = rows < 1;         // out[slice] = …: reads and writes acc once more
  // Per element of o: o − o_blk reads 2, writes 1; sigmoid(…)·(…) reads 1, writes 1; o − (…) reads 2,
  // writes 1 (in acc); per row three lse kernels read and write one acc each.
  const double read_elt = (cast ? e : 0) + 5 * acc + (sliced ? acc : 0);
  const double written_elt = (cast ? acc : 0) + 3 * acc + (sliced ? acc : 0);
  const double n = rows * elems(o), r = rows * elems(lse);
  return {OpClass::elementwise, 3 * n + 8 * r, static_cast<std::uint64_t>(read_elt * n + 3 * acc * r),
          static_cast<std::uint64_t>(written_elt * n + 3 * acc * r), KernelShapes{{}, {}, 6}};
}

OpCost add(const Shape& out, DType dt) {
  return {OpClass::elementwise, 3 * elems(out), 2 * bytes_of(out, dt), bytes_of(out, dt)};
}

OpCost add(const Shape& out, DType a, DType b, DType out_dt) {
  return {OpClass::elementwise, 3 * elems(out), bytes_of(out, a) + bytes_of(out, b), bytes_of(out, out_dt)};
}

OpCost scale(const Shape& x, DType dt) {
  return {OpClass::elementwise, elems(x), bytes_of(x, dt), bytes_of(x, dt)};
}

OpCost fill(const Shape& x, DType dt) {
  return {OpClass::copy, 0, 0, bytes_of(x, dt)};
}

OpCost copy(const Shape& moved, DType dt) {
  return {OpClass::copy, 0, bytes_of(moved, dt), bytes_of(moved, dt)};
}

OpCost convert(const Shape& moved, DType from, DType to) {
  return {OpClass::copy, 0, bytes_of(moved, from), bytes_of(moved, to)};
}

OpCost slice_assign(const Shape& src, DType dt, bool accumulate) {
  if (!accumulate) return copy(src, dt);
  return {OpClass::elementwise, elems(src), 2 * bytes_of(src, dt), bytes_of(src, dt)};
}

namespace {
struct LinearDims {
  double rows, in, out;
};
[[nodiscard]] LinearDims linear_dims(const Shape& x, const Shape& w) {
  if (x.empty() || w.size() != 2 || x.back() != w[1])
    fail("linear: x " + to_string(x) + " and w " + to_string(w) + " do not match (w must be [out, in])");
  const double in = static_cast<double>(w[1]);
  return {in == 0 ? 0 : elems(x) / in, in, static_cast<double>(w[0])};
}
}  // namespace

OpCost linear(const Shape& x, const Shape& w, bool bias, DType dt) {
  const LinearDims l = linear_dims(x, w);
  const double flops = 2 * l.rows * l.in * l.out + (bias ? l.rows * l.out : 0);
  const auto e = dtype_bytes(dt);
  const auto y = static_cast<std::uint64_t>(l.rows * l.out) * e;
  const auto i = [](double v) { return static_cast<std::int64_t>(v); };
  return {OpClass::gemm, flops,
          bytes_of(x, dt) + bytes_of(w, dt) + (bias ? static_cast<std::uint64_t>(l.out) * e : 0), y,
          KernelShapes{{}, {GemmShape{1, i(l.rows), i(l.out), i(l.in)}}, 1}};
}

OpCost linear_backward(const Shape& x, const Shape& w, bool dx, bool bias, bool accumulate_dx, DType dt,
                       bool fp32_dw) {
  const LinearDims l = linear_dims(x, w);
  const double flops = (dx ? 2 * l.rows * l.out * l.in : 0) + 2 * l.rows * l.in * l.out + l.out * l.in +
                       (bias ? l.rows * l.out : 0);
  const auto e = dtype_bytes(dt);
  const std::uint64_t xb = bytes_of(x, dt), wb = bytes_of(w, dt);
  fp32_dw = fp32_dw && dtype_bytes(dt) < 4;  // an fp32 main gradient only behind 16-bit weights
  const std::uint64_t dwb = fp32_dw ? bytes_of(w, DType::f32) : wb;  // dw read and written
  const auto dyb = static_cast<std::uint64_t>(l.rows * l.out) * e;
  const std::uint64_t bb = bias ? static_cast<std::uint64_t>(l.out) * e : 0;
  const std::uint64_t read = xb + wb + dyb + dwb + bb + (dx && accumulate_dx ? xb : 0);
  const auto i = [](double v) { return static_cast<std::int64_t>(v); };
  KernelShapes k{{}, {GemmShape{1, i(l.out), i(l.in), i(l.rows), fp32_dw ? 8 : 0}}, dx ? 2 : 1};  // dw += dyᵀ x
  if (dx) k.gemms.push_back(GemmShape{1, i(l.rows), i(l.in), i(l.out)});         // dx = dy w
  if (bias) {  // db = dy summed over the rows: a reduction kernel of its own that reads dy again and
               // writes db (the op's roofline bytes and flops already count db's; this is the kernel)
    k.aux_bytes = dyb + bb;
    ++k.launches;
  }
  return {OpClass::gemm, flops, read, (dx ? xb : 0) + dwb + bb, std::move(k)};
}

namespace {
// [rows] and [cols] vector bytes of a layer-norm input whose last dim is cols.
[[nodiscard]] std::uint64_t row_vec_bytes(const Shape& x, DType dt) {
  return x.empty() || x.back() == 0 ? 0 : static_cast<std::uint64_t>(numel(x) / x.back()) * dtype_bytes(dt);
}
[[nodiscard]] std::uint64_t col_vec_bytes(const Shape& x, DType dt) {
  return x.empty() ? 0 : static_cast<std::uint64_t>(x.back()) * dtype_bytes(dt);
}
}  // namespace

OpCost layer_norm(const Shape& x, DType dt) {
  const std::uint64_t xb = bytes_of(x, dt), rb = row_vec_bytes(x, dt), cb = col_vec_bytes(x, dt);
  return {OpClass::elementwise, 8 * elems(x), xb + 2 * cb, xb + 2 * rb};
}

OpCost layer_norm_backward(const Shape& x, DType dt, bool accumulate_dx) {
  const std::uint64_t xb = bytes_of(x, dt), rb = row_vec_bytes(x, dt), cb = col_vec_bytes(x, dt);
  // x, dy, gamma, mean, rstd, dgamma, dbeta (+ dx); writes dx, dgamma, dbeta.
  return {OpClass::elementwise, 13 * elems(x), 2 * xb + cb + 2 * rb + 2 * cb + (accumulate_dx ? xb : 0),
          xb + 2 * cb};
}

OpCost gelu(const Shape& x, DType dt) {
  return {OpClass::elementwise, 10 * elems(x), bytes_of(x, dt), bytes_of(x, dt)};
}

OpCost gelu_backward(const Shape& x, DType dt) {
  return {OpClass::elementwise, 15 * elems(x), 2 * bytes_of(x, dt), bytes_of(x, dt)};
}

OpCost dropout(const Shape& x, DType dt, bool residual) {
  const std::uint64_t xb = bytes_of(x, dt), mask = static_cast<std::uint64_t>(numel(x));
  return {OpClass::elementwise, 13 * elems(x), residual ? 2 * xb : xb, xb + mask};
}

OpCost dropout_backward(const Shape& x, DType dt) {
  const std::uint64_t xb = bytes_of(x, dt), mask = static_cast<std::uint64_t>(numel(x));
  return {OpClass::elementwise, 2 * elems(x), xb + mask, xb};
}

OpCost swiglu(const Shape& x, DType dt) {
  return {OpClass::elementwise, 6 * elems(x), 2 * bytes_of(x, dt), bytes_of(x, dt)};
}

OpCost swiglu_backward(const Shape& x, DType dt) {
  return {OpClass::elementwise, 11 * elems(x), 3 * bytes_of(x, dt), 2 * bytes_of(x, dt)};
}

}  // namespace cost
}  // namespace spsim::rt
