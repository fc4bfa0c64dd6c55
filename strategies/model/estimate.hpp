// The closed-form step-time model a strategy family registers (strategies/<family>/closed_form.cpp):
// what it returns (CostEstimate), what it asks of the cluster (Hardware) and how it adds up one rank's
// timeline (Timeline). Three ingredients, each the same model the simulator replays but summed by hand
// instead of by the event engine:
//
//  γ  compute. Per Device op, the cost formulas of runtime/cost.hpp (FLOPs and bytes from shapes)
//     fed to the compute model of DESIGN.md §6:
//         t_op = max(FLOPs / (peak[dtype] × eff[class]), bytes / (HBM × eff[class])) + launch.
//  α-β communication. The simulator's own estimate of each collective algorithm (Algorithm::estimate_s
//     in sim/collectives/<alg>.cpp; Hardware below): with α = protocol step latency + route latency,
//     β = 1 / (protocol efficiency × route bandwidth), n bytes and P ranks (DESIGN.md §6; Patarasuk &
//     Yuan, JPDC 2009) ring all-reduce base + 2(P−1)(α + nβ/P), ring reduce-scatter / all-gather and
//     pairwise all-to-all base + (P−1)(α + nβ/P), direct all-to-all base + α + (P−1)·nβ/P, one ring pass
//     (sendrecv) base + α + nβ; trees, NVLS and hierarchical by theirs.
//  Overlap. Each strategy's structure, written out in its closed_form.cpp: for RSA a ring step posts the
//     pass of the next chunk, computes on the current one, then waits, so
//         one step = max(t_compute(step), t_pass),   a ring over P chunks = Σ_{steps<P−1} max(·) + t_last.
//     Communication kernels slow concurrent compute by simulation.compute_slowdown σ, which turns
//     max(t_compute, t_pass) into max(t_pass, t_compute + σ/(1+σ)·t_pass) (Timeline below).
//
// On an uncontended cluster (one SP group, single node, or a ring whose every hop is its own link)
// this is what the replay computes, so the two agree to rounding; tests/analysis/closed_form/ pins that to
// 2%.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/comm_kind.hpp"
#include "runtime/cost.hpp"

namespace spsim::strategies {

struct CostEstimate {
  double step_s = 0;  // forward (+ backward) of one step, seconds
  double forward_s = 0;
  double backward_s = 0;
  double compute_s = 0;       // busy time of one rank's compute stream
  double comm_s = 0;          // busy time of one rank's communication stream
  double exposed_comm_s = 0;  // step − compute: communication no compute hides
  // Payload bytes one rank sends: ring passes plus ring-algorithm collective bytes (2(P−1)/P·n for an
  // all-reduce, (P−1)/P·n for a reduce-scatter); exact where the collectives run as rings.
  double bytes_sent = 0;
};

// A closed form's or memory model's answer for one configuration: the estimate, or why there is none
// (shown in the comparison table's note).
template <class T>
struct Modelled {
  std::optional<T> value;
  std::string reason;  // set when value is empty
  Modelled() = default;
  Modelled(T v) : value(std::move(v)) {}  // NOLINT(google-explicit-constructor): an estimate is an answer
  static Modelled none(std::string why) {
    Modelled m;
    m.reason = std::move(why);
    return m;
  }
  [[nodiscard]] bool has_value() const { return value.has_value(); }
  explicit operator bool() const { return value.has_value(); }
  const T* operator->() const { return &*value; }
  const T& operator*() const { return *value; }
};

// The cluster as the closed forms see it: the compute model of DESIGN.md §6 and, for communication,
// the simulator's own estimate of the collective algorithm its tuner (or the config) runs, so that
// there is one α-β formula per algorithm in the codebase (analysis/closed_form/hardware_model.hpp
// implements it). Ranks are the SP group's, 0..P−1 on the cluster's first P GPUs (node-major).
class Hardware {
 public:
  virtual ~Hardware() = default;
  [[nodiscard]] virtual int ranks() const = 0;
  [[nodiscard]] virtual double gpu_memory_bytes() const = 0;
  // t_op = max(FLOPs / (peak[dtype] × eff[class]), bytes / (HBM × eff[class])) + launch, seconds.
  [[nodiscard]] virtual double op_time_s(const rt::OpCost& cost) const = 0;
  // One ring pass of `bytes` per rank over `group` (SP ranks in group order, member m sending to
  // m+1, e.g. a USP ring group j, u+j, …): the slowest member's sendrecv, seconds.
  [[nodiscard]] virtual double ring_pass_s(double bytes, const std::vector<int>& group) const = 0;
  // A collective of `kind` (rt::tuned_kinds()) over `group` with the config's algorithm choice;
  // bytes as in nccl-tests' size column (all_to_all: the send buffer, n/P to each rank). Seconds.
  [[nodiscard]] virtual double collective_s(rt::CommKind kind, double bytes,
                                            const std::vector<int>& group) const = 0;
  // The same over all P ranks.
  [[nodiscard]] double ring_pass_s(double bytes) const { return ring_pass_s(bytes, all_ranks()); }
  [[nodiscard]] double collective_s(rt::CommKind kind, double bytes) const {
    return collective_s(kind, bytes, all_ranks());
  }

 private:
  [[nodiscard]] std::vector<int> all_ranks() const {
    std::vector<int> r(static_cast<std::size_t>(ranks()));
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<int>(i);
    return r;
  }
};

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
  // A step whose communication stream runs two launches, t_first then t_rest (both posted before the
  // step), while compute runs t_compute from the start and then t_after once the first communication
  // has ended (it needs what arrived: Ring Attention's accumulator add). The first starts with the
  // step; the second when the first ends, unless the step's compute kernel is running then: a launch
  // reaching a GPU whose SMs a kernel launched before it holds waits for that kernel's end (the
  // replay's launch rule, sim/replay/replay.hpp), unless both are one launch (one_launch: they run back
  // to back from the start). With t_first = t_after = 0 this is overlapped(t_compute, t_rest).
  void overlapped_then(double t_compute, double t_first, double t_rest, double t_after, double sent,
                       bool one_launch = false) {
    double comm_end = t_first + t_rest, pre_end = compute_end(0, t_compute, comm_end);
    if (!one_launch && t_first > 0 && t_rest > 0) {
      const double alone = compute_end(0, t_compute, t_first);  // slowed by the first launch only
      if (alone > t_first) {  // the second launch waits for the compute, then runs with the add
        pre_end = alone;
        comm_end = alone + t_rest;
      }
    }
    const double after_start = std::max(pre_end, t_first),
                 after_end = compute_end(after_start, t_after, comm_end);
    time += std::max(comm_end, after_end);
    compute += pre_end + (after_end - after_start);
    comm += t_first + t_rest;
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
[[nodiscard]] inline double attention_op_s(const Hardware& hw, const rt::OpCost& cost) {
  return cost.bytes() == 0 ? 0 : hw.op_time_s(cost);
}

}  // namespace spsim::strategies
