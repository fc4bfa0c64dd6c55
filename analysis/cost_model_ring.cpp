// Closed-form step time of Ring Attention (strategies/ring.cpp): blockwise attention overlapped with
// the K/V ring, per rank, the slowest rank setting the step.
//
// Rank r at step j holds the K/V block of owner o = (r − j) mod P; its mask (global positions of the
// layout: contiguous, zigzag, striped) gives the block's unmasked fraction f(r, o), and a block with
// f = 0 is skipped (no kernel, no merge). Let p = one sendrecv of a K (= V = dK = dV) block,
// a_j = attention_forward(f), m = merge_attention, a'_j = attention_backward(f), z = a fill of one
// K-sized block, + = an add of one. A step overlaps its compute with the passes posted before it
// (Timeline::overlapped: max(t_comm, t_compute + σ/(1+σ)·t_comm)):
//   forward   step j < P−1: overlap(a_j + [j>0, f>0]·m, 2p)   (the K and V passes of the next block)
//             step P−1:     a_{P−1} + m
//   backward  fills of dq, dk, dv; then step j overlaps
//               compute  [j≥1]·2z + a'_j + [j≥2]·2(+)         (fresh partial; add the incoming accumulator)
//               comm     [j≥2]·2p (the dK/dV accumulators of step j−1, posted after its add)
//                        + [j<P−1]·2p (the next K/V block)
//             and ends with the last accumulator pass 2p and its add 2(+).
// In the backward, the accumulator pass of step j−1 waits for step j−1's add, and step j's compute for
// the K/V pass of step j−1: both start when step j−1 ends, so step j is one overlap of the two, except
// that step j's add waits for the accumulator to arrive (Timeline::overlapped_then):
//   step j = max(t_acc + t_next, max(end of the block's compute, t_acc) + t_add), compute slowed by
//   1 + σ while a pass runs. Communication-bound, the last step's add is therefore not hidden.
// The model follows each rank on its own, which is exact when no rank waits for a slower neighbour's
// pass: the critical rank (most unmasked work: rank P−1 with the contiguous layout under causal)
// receives each block from a rank that is no further behind. (Under causal, contiguous, rank 0 waits
// for rank P−1's last dK/dV accumulator and ends at the same instant; the simulator's summary breaks
// such ties towards the busier rank, so both report the heavy rank's compute/comm split.) A rank sends
// 2(P−1)·|k| forward and 4(P−1)·|k| backward.
#include "analysis/cost_model_detail.hpp"
#include "strategies/layouts.hpp"

namespace spsim::analysis::detail {

namespace {

using rt::OpCost;
using rt::Shape;

class RingModel {
 public:
  RingModel(const Config& c, const HardwareModel& hw)
      : hw_(hw),
        dt_(c.workload.dtype),
        causal_(c.workload.causal),
        sigma_(c.simulation.compute_slowdown),
        p_(c.strategy.degree),
        n_(c.workload.seq_len / c.strategy.degree),
        bh_(c.workload.batch * c.model.heads),
        bkv_(c.workload.batch * c.model.kv_heads),
        d_(c.model.head_dim) {
    const auto layout = strategies::parse_layout(c.strategy.options.at("layout"));
    for (int owner = 0; owner < p_; ++owner)
      positions_.push_back(strategies::layout_positions(layout, owner, p_, c.workload.seq_len));
  }

  // The rank whose timeline ends last.
  [[nodiscard]] CostEstimate estimate(bool backward) const {
    CostEstimate worst;
    for (int r = 0; r < p_; ++r) {
      const CostEstimate e = rank_estimate(r, backward);
      if (r == 0 || e.step_s > worst.step_s) worst = e;
    }
    return worst;
  }

 private:
  [[nodiscard]] double op(const OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] Shape q() const { return {bh_, n_, d_}; }
  [[nodiscard]] Shape kv() const { return {bkv_, n_, d_}; }
  [[nodiscard]] double kv_bytes() const {
    return static_cast<double>(rt::numel(kv()) * rt::dtype_bytes(dt_));
  }
  [[nodiscard]] rt::Mask mask(int r, int owner) const {
    return rt::Mask{causal_, &positions_[static_cast<std::size_t>(r)],
                    &positions_[static_cast<std::size_t>(owner)]};
  }

  [[nodiscard]] CostEstimate rank_estimate(int r, bool backward) const {
    Timeline t;
    t.sigma = sigma_;
    const double pass = p_ > 1 ? 2 * hw_.ring_pass_s(kv_bytes()) : 0, sent = 2 * kv_bytes();
    for (int j = 0; j < p_; ++j) {
      const rt::Mask m = mask(r, (r - j + p_) % p_);
      double c = attention_op_s(hw_, rt::cost::attention_forward(q(), kv(), kv(), dt_, m));
      if (j > 0 && rt::unmasked_fraction(m) > 0) c += op(rt::cost::merge_attention(q(), dt_));
      if (j + 1 < p_)
        t.overlapped(c, pass, sent);
      else
        t.compute_only(c);
    }
    t.end_forward();
    if (!backward) return t.estimate();
    const double fill = op(rt::cost::fill(kv(), dt_)), add = op(rt::cost::add(kv(), dt_));
    t.compute_only(op(rt::cost::fill(q(), dt_)) + 2 * fill);
    for (int j = 0; j < p_; ++j) {
      const rt::Mask m = mask(r, (r - j + p_) % p_);
      const double c = attention_op_s(hw_, rt::cost::attention_backward(q(), kv(), kv(), dt_, m)) +
                       (j >= 1 ? 2 * fill : 0);
      const int acc = j >= 2 ? 1 : 0, next = j + 1 < p_ ? 1 : 0;
      if (acc + next > 0)
        t.overlapped_then(c, acc * pass, next * pass, acc * 2 * add, (acc + next) * sent);
      else
        t.compute_only(c);
    }
    if (p_ > 1) {
      t.comm_only(pass, sent);
      t.compute_only(2 * add);
    }
    return t.estimate();
  }

  const HardwareModel& hw_;
  rt::DType dt_;
  bool causal_;
  double sigma_;
  int p_;
  std::int64_t n_, bh_, bkv_, d_;
  std::vector<std::vector<std::int64_t>> positions_;  // per rank (= per owner of a K/V block)
};

}  // namespace

CostEstimate ring_closed_form(const Config& config, const HardwareModel& hw, bool backward) {
  return RingModel(config, hw).estimate(backward);
}

}  // namespace spsim::analysis::detail
