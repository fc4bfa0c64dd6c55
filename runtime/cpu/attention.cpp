// CPU softmax and flash-attention style block kernels: one GEMM per batch for the scores, a vectorised
// row pass for the masked softmax, one GEMM per batch for each product with the probabilities.
#include <cmath>
#include <initializer_list>
#include <limits>

#include "runtime/cpu/detail/kernels.hpp"

namespace spsim::rt::cpu {

namespace {

template <class T>
constexpr T neg_inf = -std::numeric_limits<T>::infinity();

Shape drop_last(Shape s) {
  s.pop_back();
  return s;
}

void check_no_alias(const Tensor& out, std::initializer_list<const Tensor*> inputs, std::string_view op,
                    std::string_view arg) {
  for (const Tensor* in : inputs)
    if (in->defined() && in->storage() == out.storage())
      fail(op, "output '" + std::string(arg) + "' shares storage with an input");
}

template <class T>
using ConstRowMap = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>;

// In place, on one row of scaled scores s: s <- exp(s - m) / Σ exp(s - m) over the allowed entries, with
// m their max (max-subtraction keeps exp in range); masked entries become exactly 0. `bias`/`keep` are
// the row of a partial mask (null: nothing masked). Returns the row's log-sum-exp m + log Σ exp(s - m);
// a row with every entry masked becomes zeros and returns -inf.
template <class T, class Row>
T softmax_row(Row s, const T* bias, const T* keep) {
  if (s.size() == 0) return neg_inf<T>;
  const T m = bias == nullptr ? s.maxCoeff() : (s + ConstRowMap<T>(bias, s.size())).maxCoeff();
  if (m == neg_inf<T>) {
    s.setZero();
    return neg_inf<T>;
  }
  if (keep == nullptr)
    s = (s - m).exp();
  else
    s = (s - m).min(T(0)).exp() * ConstRowMap<T>(keep, s.size());  // masked scores may exceed m: capped
  const T l = s.sum();
  s *= T(1) / l;
  return m + std::log(l);
}

// The shapes shared by the forward and backward attention block.
struct AttentionShapes {
  Batched q, k, v;
};

AttentionShapes attention_shapes(const Tensor& q, const Tensor& k, const Tensor& v, std::string_view op) {
  AttentionShapes s{batched(q, op, "q"), batched(k, op, "k"), batched(v, op, "v")};
  if (s.k.cols != s.q.cols)
    fail(op, "q " + to_string(q.shape()) + " and k " + to_string(k.shape()) + " differ in head dim");
  if (s.v.rows != s.k.rows)
    fail(op, "k " + to_string(k.shape()) + " and v " + to_string(v.shape()) + " differ in key count");
  check_broadcast(s.q.batch, s.k.batch, op, "k");
  check_broadcast(s.q.batch, s.v.batch, op, "v");
  return s;
}

// An output of the backward that may be shared by several query batches (GQA dK/dV): it must have the
// rows x cols of `like` and a batch count dividing n.
Batched grad_view(const Tensor& g, const Batched& like, std::int64_t n, std::string_view op,
                  std::string_view arg) {
  const Batched b = batched(g, op, arg);
  if (b.rows != like.rows || b.cols != like.cols)
    fail(op, "gradient '" + std::string(arg) + "' " + to_string(g.shape()) + " does not match its input's " +
                 std::to_string(like.rows) + " x " + std::to_string(like.cols) + " matrices");
  check_broadcast(n, b.batch, op, arg);
  return b;
}

// In place, per row r of a block: p <- P = exp(S - lse_r) (masked entries 0) and dp <- dS = P ⊙ (dP - D_r).
// Allowed scores never exceed the final lse; masked ones may, so the exponent is capped at 0 to keep exp
// finite (inf · 0 would be NaN). A row with lse = -inf attends to nothing anywhere and gets no gradient.
template <class T>
void probabilities_and_score_grads(Mat<T>& p, Mat<T>& dp, const ConstColMap<T>& lse, const Col<T>& delta,
                                   const MaskPlan<T>& plan) {
  for (Eigen::Index r = 0; r < p.rows(); ++r) {
    if (lse(r) == neg_inf<T>) {
      p.row(r).setZero();
      dp.row(r).setZero();
      continue;
    }
    if (plan.kind == MaskKind::partial)
      p.row(r).array() = (p.row(r).array() - lse(r)).min(T(0)).exp() * plan.keep.row(r).array();
    else
      p.row(r).array() = (p.row(r).array() - lse(r)).exp();
    dp.row(r).array() = p.row(r).array() * (dp.row(r).array() - delta(r));
  }
}

}  // namespace

template <class T>
void softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) {
  constexpr std::string_view op = "softmax";
  const T* px = data_of<T>(x, op, "x");
  T* py = data_of<T>(y, op, "y");
  const Batched xs = batched(x, op, "x");
  expect_shape(y, x.shape(), op, "y");
  const MaskPlan<T> plan = plan_mask<T>(mask, xs.rows, xs.cols, op);
  MatMap<T> ym(py, xs.batch * xs.rows, xs.cols);
  if (plan.kind == MaskKind::none) {
    ym.setZero();
    return;
  }
  const ConstMatMap<T> xm(px, xs.batch * xs.rows, xs.cols);
  const T s = static_cast<T>(scale);
  for (std::int64_t b = 0; b < xs.batch; ++b) {
    for (std::int64_t r = 0; r < xs.rows; ++r) {
      const std::int64_t i = b * xs.rows + r;
      const bool partial = plan.kind == MaskKind::partial;
      ym.row(i) = s * xm.row(i);
      (void)softmax_row<T>(ym.row(i).array(), partial ? plan.bias.row(r).data() : nullptr,
                           partial ? plan.keep.row(r).data() : nullptr);
    }
  }
}

template <class T>
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) {
  constexpr std::string_view op = "softmax_backward";
  const T* py = data_of<T>(y, op, "y");
  const T* pdy = data_of<T>(dy, op, "dy");
  T* pdx = data_of<T>(dx, op, "dx");
  const Batched ys = batched(y, op, "y");
  expect_shape(dy, y.shape(), op, "dy");
  expect_shape(dx, y.shape(), op, "dx");
  const std::int64_t rows = ys.batch * ys.rows;
  const ConstMatMap<T> ym(py, rows, ys.cols), dym(pdy, rows, ys.cols);
  MatMap<T> dxm(pdx, rows, ys.cols);
  const T s = static_cast<T>(scale);
  for (std::int64_t i = 0; i < rows; ++i) {
    // dx may alias dy: the row's dot product is taken before the row is overwritten.
    const T dot = ym.row(i).dot(dym.row(i));
    dxm.row(i).array() = s * ym.row(i).array() * (dym.row(i).array() - dot);
  }
}

template <class T>
void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, Tensor& lse,
                             double scale, const Mask& mask) {
  constexpr std::string_view op = "attention_block_forward";
  const T* pq = data_of<T>(q, op, "q");
  const T* pk = data_of<T>(k, op, "k");
  const T* pv = data_of<T>(v, op, "v");
  T* po = data_of<T>(o, op, "o");
  T* plse = data_of<T>(lse, op, "lse");
  const auto [qs, ks, vs] = attention_shapes(q, k, v, op);
  Shape o_shape = q.shape();
  o_shape.back() = vs.cols;
  expect_shape(o, o_shape, op, "o");
  expect_shape(lse, drop_last(q.shape()), op, "lse");
  check_no_alias(o, {&q, &k, &v, &lse}, op, "o");
  const MaskPlan<T> plan = plan_mask<T>(mask, qs.rows, ks.rows, op);
  MatMap<T> om(po, qs.batch * qs.rows, vs.cols);
  ColMap<T> lsem(plse, qs.batch * qs.rows);
  if (plan.kind == MaskKind::none || ks.rows == 0) {  // nothing to attend to: costs only the fill
    om.setZero();
    lsem.setConstant(neg_inf<T>);
    return;
  }
  const T sc = static_cast<T>(scale);
  Mat<T> p(qs.rows, ks.rows);
  for (std::int64_t b = 0; b < qs.batch; ++b) {
    const ConstMatMap<T> qb(pq + b * qs.stride(), qs.rows, qs.cols);
    const ConstMatMap<T> kb(pk + source_batch(b, qs.batch, ks.batch) * ks.stride(), ks.rows, ks.cols);
    const ConstMatMap<T> vb(pv + source_batch(b, qs.batch, vs.batch) * vs.stride(), vs.rows, vs.cols);
    p.noalias() = sc * qb * kb.transpose();
    const bool partial = plan.kind == MaskKind::partial;
    for (std::int64_t r = 0; r < qs.rows; ++r)
      lsem(b * qs.rows + r) = softmax_row<T>(p.row(r).array(), partial ? plan.bias.row(r).data() : nullptr,
                                             partial ? plan.keep.row(r).data() : nullptr);
    om.middleRows(b * qs.rows, qs.rows).noalias() = p * vb;
  }
}

template <class T>
void attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv,
                              double scale, const Mask& mask) {
  constexpr std::string_view op = "attention_block_backward";
  const T* pq = data_of<T>(q, op, "q");
  const T* pk = data_of<T>(k, op, "k");
  const T* pv = data_of<T>(v, op, "v");
  const T* po = data_of<T>(o, op, "o");
  const T* pdo = data_of<T>(d_o, op, "d_o");
  const T* plse = data_of<T>(lse, op, "lse");
  T* pdq = data_of<T>(dq, op, "dq");
  T* pdk = data_of<T>(dk, op, "dk");
  T* pdv = data_of<T>(dv, op, "dv");
  const auto [qs, ks, vs] = attention_shapes(q, k, v, op);
  Shape o_shape = q.shape();
  o_shape.back() = vs.cols;
  expect_shape(o, o_shape, op, "o");
  expect_shape(d_o, o_shape, op, "d_o");
  expect_shape(lse, drop_last(q.shape()), op, "lse");
  const Batched dqs = grad_view(dq, qs, qs.batch, op, "dq");
  const Batched dks = grad_view(dk, ks, qs.batch, op, "dk");
  const Batched dvs = grad_view(dv, vs, qs.batch, op, "dv");
  for (const auto& [g, name] :
       {std::pair<const Tensor*, std::string_view>{&dq, "dq"}, {&dk, "dk"}, {&dv, "dv"}})
    check_no_alias(*g, {&q, &k, &v, &o, &d_o, &lse}, op, name);
  const MaskPlan<T> plan = plan_mask<T>(mask, qs.rows, ks.rows, op);
  if (plan.kind == MaskKind::none || ks.rows == 0 || qs.rows == 0) return;  // no allowed pair: zero gradient

  const T sc = static_cast<T>(scale);
  const std::int64_t sq = qs.rows;
  Mat<T> p(sq, ks.rows), dp(sq, ks.rows);
  Col<T> delta(sq);
  for (std::int64_t b = 0; b < qs.batch; ++b) {
    const ConstMatMap<T> qb(pq + b * qs.stride(), sq, qs.cols);
    const ConstMatMap<T> kb(pk + source_batch(b, qs.batch, ks.batch) * ks.stride(), ks.rows, ks.cols);
    const ConstMatMap<T> vb(pv + source_batch(b, qs.batch, vs.batch) * vs.stride(), vs.rows, vs.cols);
    const ConstMatMap<T> ob(po + b * sq * vs.cols, sq, vs.cols), dob(pdo + b * sq * vs.cols, sq, vs.cols);
    const ConstColMap<T> lseb(plse + b * sq, sq);
    MatMap<T> dqb(pdq + source_batch(b, qs.batch, dqs.batch) * dqs.stride(), sq, qs.cols);
    MatMap<T> dkb(pdk + source_batch(b, qs.batch, dks.batch) * dks.stride(), ks.rows, ks.cols);
    MatMap<T> dvb(pdv + source_batch(b, qs.batch, dvs.batch) * dvs.stride(), vs.rows, vs.cols);

    delta = (dob.array() * ob.array()).rowwise().sum();  // D = rowsum(dO ⊙ O)
    p.noalias() = sc * qb * kb.transpose();
    dp.noalias() = dob * vb.transpose();
    probabilities_and_score_grads(p, dp, lseb, delta, plan);
    dvb.noalias() += p.transpose() * dob;
    dqb.noalias() += sc * dp * kb;
    dkb.noalias() += sc * dp.transpose() * qb;
  }
}

template <class T>
void merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) {
  constexpr std::string_view op = "merge_attention";
  T* po = data_of<T>(o, op, "o");
  T* plse = data_of<T>(lse, op, "lse");
  const T* pob = data_of<T>(o_blk, op, "o_blk");
  const T* plb = data_of<T>(lse_blk, op, "lse_blk");
  if (o.ndim() < 1) fail(op, "o must have rank >= 1");
  expect_shape(o_blk, o.shape(), op, "o_blk");
  expect_shape(lse, drop_last(o.shape()), op, "lse");
  expect_shape(lse_blk, lse.shape(), op, "lse_blk");
  const std::int64_t rows = lse.numel(), d = o.dim(-1);
  MatMap<T> om(po, rows, d);
  const ConstMatMap<T> obm(pob, rows, d);
  ColMap<T> l(plse, rows);
  const ConstColMap<T> lb(plb, rows);
  // Shift by m = max(lse, lse_blk) (0 where both are -inf) so the exps cannot overflow.
  const Col<T> m_raw = l.max(lb);
  const Col<T> m = (m_raw == neg_inf<T>).select(T(0), m_raw);
  // select, because Eigen's vectorised exp(-inf) is the smallest normal number rather than 0.
  const Col<T> e = (l == neg_inf<T>).select(T(0), (l - m).exp());
  const Col<T> e_blk = (lb == neg_inf<T>).select(T(0), (lb - m).exp());
  const Col<T> sum = e + e_blk;
  const Col<T> inv = (sum > T(0)).select(sum.inverse(), T(0));  // both -inf: the row stays o = 0
  const Col<T> w = e * inv, w_blk = e_blk * inv;
  om = w.matrix().asDiagonal() * om + w_blk.matrix().asDiagonal() * obm;
  l = m + sum.log();
}

#define SPSIM_INSTANTIATE(T)                                                                                 \
  template void softmax<T>(const Tensor&, Tensor&, double, const Mask&);                                     \
  template void softmax_backward<T>(const Tensor&, const Tensor&, Tensor&, double);                          \
  template void attention_block_forward<T>(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,    \
                                           double, const Mask&);                                             \
  template void attention_block_backward<T>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,      \
                                            const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor&, double, \
                                            const Mask&);                                                    \
  template void merge_attention<T>(Tensor&, Tensor&, const Tensor&, const Tensor&);
SPSIM_INSTANTIATE(float)
SPSIM_INSTANTIATE(double)
#undef SPSIM_INSTANTIATE

}  // namespace spsim::rt::cpu
