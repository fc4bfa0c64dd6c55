// Closed-form step time of DeepSpeed-Ulysses (strategies/ulysses.cpp): all-to-alls around one attention.
//
// Nothing overlaps: every all-to-all is waited for before the attention that needs it, and a
// communication op starts only once the compute issued before it has ended (sim/replay), so one rank is
//   forward   [replicate K, V] + A2A(q) + A2A(k) + A2A(v) + attention_forward + A2A(o)
//   backward  A2A(dO) + fills of dq, dk, dv + attention_backward + A2A(dq) + A2A(dk) + A2A(dv)
//             [+ sum of K/V replicas]
// with `fused` replacing each triple by concat + one A2A of the packed buffer + a slice and a permute
// per tensor (and for dQ/dK/dV a permute per tensor before the concat). Every rank does the same work,
// so the step is one rank's sum. An all-to-all of n bytes (the local tensor) costs
// HardwareModel::collective_s("all_to_all", n) and sends (P−1)/P·n.
#include <numeric>

#include "analysis/cost_model_detail.hpp"

namespace spsim::analysis::detail {

namespace {

using rt::OpCost;
using rt::Shape;
using rt::Trans;

class UlyssesModel {
 public:
  UlyssesModel(const Config& c, const HardwareModel& hw)
      : hw_(hw),
        dt_(c.workload.dtype),
        fused_(c.strategy.options.at("qkv_fusion") == "fused"),
        causal_(c.workload.causal),
        p_(c.strategy.degree),
        b_(c.workload.batch),
        h_(c.model.heads),
        s_(c.workload.seq_len),
        c_(c.workload.seq_len / c.strategy.degree),
        d_(c.model.head_dim),
        rep_(c.model.kv_heads % c.strategy.degree == 0 ? 1 : c.strategy.degree / c.model.kv_heads),
        hkv_(c.model.kv_heads * rep_),  // kv head slots sent (Hkv, or P with replication)
        positions_(static_cast<std::size_t>(s_)) {
    std::iota(positions_.begin(), positions_.end(), std::int64_t{0});
    t_.sigma = c.simulation.compute_slowdown;
  }

  CostEstimate estimate(bool backward) {
    forward();
    t_.end_forward();
    if (backward) this->backward();
    return t_.estimate();
  }

 private:
  [[nodiscard]] double op(const OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] double e() const { return static_cast<double>(rt::dtype_bytes(dt_)); }
  // Head-sharded shapes: [B·heads/P, s, d].
  [[nodiscard]] Shape qh() const { return {b_ * h_ / p_, s_, d_}; }
  [[nodiscard]] Shape kh() const { return {b_ * hkv_ / p_, s_, d_}; }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{causal_, &positions_, &positions_}; }
  // Elements of a sequence-sharded tensor with `heads` heads: B·heads·c·d.
  [[nodiscard]] double numel(std::int64_t heads) const { return static_cast<double>(b_ * heads * c_ * d_); }
  [[nodiscard]] Shape flat(std::int64_t heads) const { return {b_ * heads * c_ * d_}; }

  void all_to_all(double elements) {
    const double n = elements * e();
    t_.comm_only(hw_.collective_s("all_to_all", n), (p_ - 1.0) / p_ * n);
  }

  // K or V [B·Hkv, c, d] → [B·Hkv, rep, c·d]: a fill of the ones column and one broadcast gemm.
  [[nodiscard]] double replicate() const {
    const std::int64_t bk = b_ * (hkv_ / rep_);
    return op(rt::cost::fill({1, rep_, 1}, dt_)) +
           op(rt::cost::gemm({1, rep_, 1}, {bk, 1, c_ * d_}, {bk, rep_, c_ * d_}, Trans::N, Trans::N, dt_,
                             false));
  }
  [[nodiscard]] double reduce_replicas() const {
    const std::int64_t bk = b_ * (hkv_ / rep_);
    return op(rt::cost::fill({1, 1, rep_}, dt_)) +
           op(rt::cost::gemm({1, 1, rep_}, {bk, rep_, c_ * d_}, {bk, 1, c_ * d_}, Trans::N, Trans::N, dt_,
                             false));
  }

  // Q, K, V (or dQ, dK, dV) between layouts. to_heads: sequence → heads (after the A2A: slice,
  // permute); else heads → sequence (before it: permute; after: slice).
  void exchange_three(bool to_heads) {
    const std::vector<std::int64_t> heads = {h_, hkv_, hkv_};
    if (!fused_) {
      for (auto hx : heads) all_to_all(numel(hx));
      return;
    }
    const double total = numel(h_ + 2 * hkv_);
    if (!to_heads)
      for (auto hx : heads) t_.compute_only(op(rt::cost::copy(flat(hx), dt_)));    // permute
    t_.compute_only(op(rt::cost::copy({static_cast<std::int64_t>(total)}, dt_)));  // concat
    all_to_all(total);
    for (auto hx : heads) {
      t_.compute_only(op(rt::cost::copy(flat(hx), dt_)));                // slice
      if (to_heads) t_.compute_only(op(rt::cost::copy(flat(hx), dt_)));  // permute
    }
  }

  void forward() {
    if (rep_ > 1) t_.compute_only(2 * replicate());
    exchange_three(true);
    t_.compute_only(attention_op_s(hw_, rt::cost::attention_forward(qh(), kh(), kh(), dt_, mask())));
    all_to_all(numel(h_));  // o back to the sequence layout (one tensor: never packed)
  }

  void backward() {
    all_to_all(numel(h_));  // dO to the head layout
    t_.compute_only(op(rt::cost::fill(qh(), dt_)) + 2 * op(rt::cost::fill(kh(), dt_)));
    t_.compute_only(attention_op_s(hw_, rt::cost::attention_backward(qh(), kh(), kh(), dt_, mask())));
    exchange_three(false);
    if (rep_ > 1) t_.compute_only(2 * reduce_replicas());
  }

  const HardwareModel& hw_;
  rt::DType dt_;
  bool fused_, causal_;
  std::int64_t p_, b_, h_, s_, c_, d_, rep_, hkv_;
  std::vector<std::int64_t> positions_;
  Timeline t_;
};

}  // namespace

CostEstimate ulysses_closed_form(const Config& config, const HardwareModel& hw, bool backward) {
  return UlyssesModel(config, hw).estimate(backward);
}

}  // namespace spsim::analysis::detail
