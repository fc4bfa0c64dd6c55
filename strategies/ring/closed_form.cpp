// Closed-form step time of Ring Attention (strategies/ring/ring.cpp): blockwise attention overlapped with
// the K/V ring, per rank, the slowest rank setting the step.
//
// Rank r at step j holds the K/V block of owner o = (r − j) mod P; its mask (global positions of the
// layout: contiguous, zigzag, striped) gives the block's unmasked fraction f(r, o), and a block with
// f = 0 is skipped (no kernel, no merge). Let p = one sendrecv of a K (= V = dK = dV) block,
// a_j = attention_forward(f), m = merge_attention, a'_j = attention_backward(f) (for j ≥ 1 with the
// pass adding the block's dq into the accumulator, cost::Accumulated), z = a fill of one
// K-sized block, + = an add of one. A step overlaps its compute with the passes posted before it
// (Timeline::overlapped: max(t_comm, t_compute + σ/(1+σ)·t_comm)):
//   forward   step j < P−1: overlap(a_j + [j>0, f>0]·m, 2p)   (the K and V passes of the next block)
//             step P−1:     a_{P−1} + m
//   backward, backward_sends = separate (ring-flash-attention; P ≥ 2), with a = the accumulator's
//             width over the dtype's and p_a = one sendrecv of an fp32 dK (= dV) block (a·|k| bytes):
//             step j overlaps
//               compute  [computed]·(2z + a'_j) + [j = 0]·(fill and conversion of dq, conversions of
//                        dk, dv into the accumulators) + [j≥1, computed]·2(+)  (mixed-width adds of
//                        the block's dk, dv and the incoming accumulator)
//               comm     [j≥1]·2p_a (the accumulators of step j−1, posted at its end)
//                        + [j<P−1]·2p (the next K/V block)
//             a step whose block is fully masked computes nothing and passes the accumulator on; the
//             P-th accumulator pass (2p_a) brings this rank's sum home after the loop, then the
//             conversions of dq, dk, dv back to the dtype.
//   backward, backward_sends = packed: fills of dq, dk, dv; then step j overlaps
//               compute  [j≥1]·2z + a'_j + [j≥2]·2(+)         (fresh partial; add the incoming accumulator)
//               comm     [j≥2]·2p (the dK/dV accumulators of step j−1) + [j<P−1]·2p (the next K/V block)
//             and ends with the last accumulator pass 2p and its add 2(+).
// With separate, the accumulator pass of step j−1 leaves at its end, and step j's compute waits for
// the K/V pass of step j−1: both start when step j−1 ends. The next K/V pass, behind the accumulator
// on the stream, reaches the GPU when the accumulator has arrived; if the block's kernel is still
// running then, it holds the SMs and the pass waits for its end (the replay's launch rule), running
// beside the add (Timeline::overlapped_then):
//   t_acc < c:  step j = max(c' + t_next, c' + t_add'), c' = the compute slowed by 1 + σ during t_acc,
//               t_add' = the add slowed by 1 + σ while the K/V pass runs beside it;
//   else        step j = max(t_acc + t_next, max(end of the block's compute, t_acc) + t_add), compute
//               slowed by 1 + σ while a pass runs.
// So each step j = 1 … P−2 exposes about one K/V pass. Communication-bound, the last step's add is not
// hidden either. With packed both passes are one launch at the step's start (the second branch
// always), and the last accumulator leaves after the loop.
// The model follows each rank on its own, which is exact when no rank waits for a slower neighbour's
// pass: the critical rank (most unmasked work: rank P−1 with the contiguous layout under causal)
// receives each block from a rank that is no further behind. (Under causal, contiguous, rank 0 waits
// for rank P−1's last dK/dV accumulator and ends at the same instant; the simulator's summary breaks
// such ties towards the busier rank, so both report the heavy rank's compute/comm split.) A rank sends
// 2(P−1)·|k| forward and backward 2(P−1)·|k| + 2P·a·|k| (separate) or 4(P−1)·|k| (packed).
// RingLevel is this model for ring groups of r = P/u ranks (USP's ring level,
// strategies/usp/closed_form.cpp): P → r, the rank's tokens s/P → s/r, H and Hkv → H/u and Hkv·rep/u, and p =
// the slowest hop of the ring groups j, u+j, 2u+j, … (HardwareModel::ring_pass_s over the group's members).
#include "strategies/layouts.hpp"
#include "strategies/ring/ring.hpp"

namespace spsim::strategies {

using rt::OpCost;
using rt::Shape;

RingLevel::RingLevel(const StepConfig& c, const Hardware& hw, int u, std::int64_t kv_replication)
    : hw_(hw),
      dt_(c.workload.dtype),
      causal_(c.workload.causal),
      bounds_(c.workload.bounds),
      p_(c.degree / u),
      packed_(ring_backward_packed(c.options)),
      n_(c.workload.seq_len / p_),
      bh_(c.workload.batch * c.model.heads / u),
      bkv_(c.workload.batch * c.model.kv_heads * kv_replication / u),
      d_(c.model.head_dim) {
  const auto layout = parse_layout(c.options.at("layout"));
  const models::AttnProblem problem = models::attention_problem(c.model, c.workload);
  for (int owner = 0; owner < p_; ++owner) positions_.push_back(layout_runs(layout, owner, p_, problem));
  // Ring group j: SP ranks j, u+j, 2u+j, …; every group passes at once, each on its own hops.
  for (int j = 0; p_ > 1 && j < u; ++j) {
    std::vector<int> group;
    for (int i = 0; i < p_; ++i) group.push_back(i * u + j);
    pass_ = std::max(pass_, 2 * hw_.ring_pass_s(kv_bytes(), group));
    acc_pass_ = std::max(acc_pass_, 2 * hw_.ring_pass_s(acc_bytes(), group));
  }
}

double RingLevel::kv_bytes() const {
  return static_cast<double>(rt::numel(kv()) * rt::dtype_bytes(dt_));
}

double RingLevel::acc_bytes() const {
  return static_cast<double>(rt::numel(kv()) * rt::dtype_bytes(rt::accumulator_dtype(dt_)));
}

rt::Mask RingLevel::mask(int r, int owner) const {
  return rt::Mask{causal_, &positions_[static_cast<std::size_t>(r)],
                  &positions_[static_cast<std::size_t>(owner)], &bounds_};
}

void RingLevel::forward(Timeline& t, int r) const {
  const double sent = 2 * kv_bytes();
  for (int j = 0; j < p_; ++j) {
    const rt::Mask m = mask(r, (r - j + p_) % p_);
    const rt::OpCost a = rt::cost::attention_forward(q(), kv(), kv(), dt_, m);
    double c = attention_op_s(hw_, a);
    if (j > 0 && a.kernels.attention)
      c += op(rt::cost::merge_attention(q(), dt_, a.kernels.attention->active_rows));
    if (j + 1 < p_)
      t.overlapped(c, pass_, sent);
    else
      t.compute_only(c);
  }
}

void RingLevel::backward(Timeline& t, int r) const {
  if (packed_ || p_ == 1)  // a ring of one sums nothing: the block's backward alone (ring.cpp)
    backward_packed(t, r);
  else
    backward_separate(t, r);
}

// P ≥ 2 (a ring of one takes backward_packed).
void RingLevel::backward_separate(Timeline& t, int r) const {
  const rt::DType a = rt::accumulator_dtype(dt_);
  const double sent = 2 * kv_bytes(), acc_sent = 2 * acc_bytes();
  const double fill = op(rt::cost::fill(kv(), dt_)), add = op(rt::cost::add(kv(), dt_, a, a));
  const double to_acc = op(rt::cost::fill(q(), dt_)) + op(rt::cost::convert(q(), dt_, a)) +
                        2 * op(rt::cost::convert(kv(), dt_, a));
  for (int j = 0; j < p_; ++j) {
    const rt::Mask m = mask(r, (r - j + p_) % p_);
    const bool computed = j == 0 || m.unmasked_fraction() > 0;
    const rt::cost::Accumulated into{j >= 1, false, false};  // dq: step 0's converted; dk, dv fresh
    const double c =
        computed ? 2 * fill + attention_op_s(hw_, rt::cost::attention_backward(q(), kv(), kv(), dt_, m, into)) +
                       (j == 0 ? to_acc : 0)
                 : 0;
    const int acc = j >= 1 ? 1 : 0, next = j + 1 < p_ ? 1 : 0;
    if (acc + next > 0)
      t.overlapped_then(c, acc * acc_pass_, next * pass_, acc && computed ? 2 * add : 0,
                        acc * acc_sent + next * sent);
    else
      t.compute_only(c);
  }
  t.comm_only(acc_pass_, acc_sent);  // the P-th pass brings this rank's accumulator home
  t.compute_only(op(rt::cost::convert(q(), a, dt_)) + 2 * op(rt::cost::convert(kv(), a, dt_)));
}

void RingLevel::backward_packed(Timeline& t, int r) const {
  const double sent = 2 * kv_bytes();
  const double fill = op(rt::cost::fill(kv(), dt_)), add = op(rt::cost::add(kv(), dt_));
  t.compute_only(op(rt::cost::fill(q(), dt_)) + 2 * fill);
  for (int j = 0; j < p_; ++j) {
    const rt::Mask m = mask(r, (r - j + p_) % p_);
    const rt::cost::Accumulated into{j >= 1, false, false};  // dq holds step 0's; dk, dv are fresh partials
    const double c = attention_op_s(hw_, rt::cost::attention_backward(q(), kv(), kv(), dt_, m, into)) +
                     (j >= 1 ? 2 * fill : 0);
    const int acc = j >= 2 ? 1 : 0, next = j + 1 < p_ ? 1 : 0;
    if (acc + next > 0)
      t.overlapped_then(c, acc * pass_, next * pass_, acc * 2 * add, (acc + next) * sent, true);
    else
      t.compute_only(c);
  }
  if (p_ > 1) {
    t.comm_only(pass_, sent);
    t.compute_only(2 * add);
  }
}

Modelled<CostEstimate> ring_closed_form(const StepConfig& config, const Hardware& hw) {
  if (auto why = closed_form_scope(config)) return Modelled<CostEstimate>::none(*why);
  const bool backward = config.workload.passes == models::Passes::fwd_bwd;
  // The rank whose timeline ends last.
  const RingLevel ring(config, hw, 1, 1);
  CostEstimate worst;
  for (int r = 0; r < ring.size(); ++r) {
    Timeline t;
    t.sigma = config.compute_slowdown;
    ring.forward(t, r);
    t.end_forward();
    if (backward) ring.backward(t, r);
    const CostEstimate e = t.estimate();
    if (r == 0 || e.step_s > worst.step_s) worst = e;
  }
  return worst;
}

}  // namespace spsim::strategies
