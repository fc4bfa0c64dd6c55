// Internals of the closed forms (analysis/cost_model*.cpp): one rank's timeline and the per-strategy models.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "analysis/closed_form/cost_model.hpp"
#include "runtime/comm.hpp"

namespace spsim::analysis::detail {

// Accumulates one rank's timeline: phases run back to back; a ring step overlaps compute and a pass.
// While a communication kernel runs, compute progresses at 1/(1+σ) of its rate (σ =
// simulation.compute_slowdown, sim/replay/replay.hpp). A step that overlaps t_compute of work with a
// pass of t_comm, both starting together, then ends at max(t_comm, t_compute + σ/(1+σ)·t_comm):
// compute runs slowed for t_comm (doing t_comm/(1+σ) of its work) and at full rate after; if the pass
// outlasts even the slowed compute (t_comm ≥ (1+σ)·t_compute), the pass sets the step and compute is
// busy (1+σ)·t_compute.
struct Timeline {
  double sigma = 0;
  double time = 0, compute = 0, comm = 0, bytes = 0;
  double forward_end = 0;
  void compute_only(double t) {
    time += t;
    compute += t;
  }
  void comm_only(double t, double sent) {
    time += t;
    comm += t;
    bytes += sent;
  }
  void overlapped(double t_compute, double t_comm, double sent) {
    const double stretched = t_compute + sigma / (1 + sigma) * t_comm;
    time += std::max(t_comm, stretched);
    compute += std::min(stretched, (1 + sigma) * t_compute);
    comm += t_comm;
    bytes += sent;
  }
  // A step whose communication stream is busy for t_first then t_rest back to back (from the step's
  // start), while compute runs t_compute from the start and then t_after once the first communication
  // has ended (it needs what arrived: Ring Attention's accumulator add). With t_first = t_after = 0
  // this is overlapped(t_compute, t_rest).
  void overlapped_then(double t_compute, double t_first, double t_rest, double t_after, double sent) {
    const double comm_end = t_first + t_rest;
    const double pre_end = compute_end(0, t_compute, comm_end);
    const double after_start = std::max(pre_end, t_first),
                 after_end = compute_end(after_start, t_after, comm_end);
    time += std::max(comm_end, after_end);
    compute += pre_end + (after_end - after_start);
    comm += comm_end;
    bytes += sent;
  }
  // When compute of `work` seconds (at the full rate) that starts at `start` ends, if communication
  // slows it by 1 + σ until `comm_end`.
  [[nodiscard]] double compute_end(double start, double work, double comm_end) const {
    if (start >= comm_end) return start + work;
    const double slowed_work = (comm_end - start) / (1 + sigma);  // work done before comm_end
    return work <= slowed_work ? start + work * (1 + sigma) : comm_end + (work - slowed_work);
  }
  void end_forward() { forward_end = time; }
  [[nodiscard]] CostEstimate estimate() const {
    CostEstimate e;
    e.forward_s = forward_end;
    e.step_s = time;
    e.backward_s = time - forward_end;
    e.compute_s = compute;
    e.comm_s = comm;
    e.exposed_comm_s = std::max(0.0, time - compute);
    e.bytes_sent = bytes;
    return e;
  }
};

// t_op of an attention block: 0 when the mask hides every pair (the op is skipped, never launched).
[[nodiscard]] inline double attention_op_s(const HardwareModel& hw, const rt::OpCost& cost) {
  return cost.bytes() == 0 ? 0 : hw.op_time_s(cost);
}

// The all-to-alls of one Ulysses group (strategies/ulysses.cpp) around an attention on H/u heads;
// derivation in cost_model_ulysses.cpp. `group`: the group's SP ranks (u = its size); every member
// holds c = s/P tokens of each sequence-sharded tensor.
class UlyssesExchange {
 public:
  UlyssesExchange(const Config& c, const HardwareModel& hw, std::vector<int> group);
  void qkv_to_heads(Timeline& t) const;       // [replicate K, V]; q, k, v to the head layout
  void o_to_sequence(Timeline& t) const;      // o back to the sequence layout
  void do_to_heads(Timeline& t) const;        // dO to the head layout
  void grads_to_sequence(Timeline& t) const;  // dq, dk, dv back; [sum the K/V replicas]
  // Copies of each kv head sent: 1, or u/Hkv with kv_replication when Hkv < u.
  [[nodiscard]] std::int64_t kv_replication() const { return rep_; }

 private:
  [[nodiscard]] double op(const rt::OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] double numel(std::int64_t heads) const;
  [[nodiscard]] rt::Shape flat(std::int64_t heads) const;
  // One all-to-all of `elements` per rank; pack / unpack: its input / output chunks are strided.
  void all_to_all(Timeline& t, double elements, bool pack, bool unpack) const;
  void all_to_all_one(Timeline& t, std::int64_t heads, bool to_heads) const;
  [[nodiscard]] double replicate(bool reduce) const;
  void exchange_three(Timeline& t, bool to_heads) const;

  const HardwareModel& hw_;
  rt::DType dt_;
  bool fused_;
  std::vector<int> group_;
  std::int64_t u_, b_, h_, c_, d_, rep_, hkv_;
};

// Ring Attention (strategies/ring.cpp) over ring groups of r = P/u ranks on the H/u query heads (and
// Hkv·rep/u kv heads) one Ulysses level of degree u hands each rank; u = 1 is the ring strategy.
// Derivation in cost_model_ring.cpp. `i`: the rank's position in its ring (its rows are the layout's
// share i of r).
class RingLevel {
 public:
  RingLevel(const Config& c, const HardwareModel& hw, int u, std::int64_t kv_replication);
  [[nodiscard]] int size() const { return p_; }
  void forward(Timeline& t, int i) const;
  void backward(Timeline& t, int i) const;

 private:
  [[nodiscard]] double op(const rt::OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] rt::Shape q() const { return {bh_, n_, d_}; }
  [[nodiscard]] rt::Shape kv() const { return {bkv_, n_, d_}; }
  [[nodiscard]] double kv_bytes() const;
  [[nodiscard]] rt::Mask mask(int r, int owner) const;

  const HardwareModel& hw_;
  rt::DType dt_;
  bool causal_;
  int p_;
  std::int64_t n_, bh_, bkv_, d_;
  double pass_ = 0;                                   // the K and V passes of one step, seconds
  std::vector<std::vector<std::int64_t>> positions_;  // per ring position (= per owner of a K/V block)
};

// One model per strategy family (attention scope); `backward`: passes fwd+bwd.
[[nodiscard]] CostEstimate ulysses_closed_form(const Config& config, const HardwareModel& hw, bool backward);
[[nodiscard]] CostEstimate ring_closed_form(const Config& config, const HardwareModel& hw, bool backward);
[[nodiscard]] CostEstimate usp_closed_form(const Config& config, const HardwareModel& hw, bool backward);
[[nodiscard]] CostEstimate allgather_kv_closed_form(const Config& config, const HardwareModel& hw,
                                                    bool backward);

}  // namespace spsim::analysis::detail
