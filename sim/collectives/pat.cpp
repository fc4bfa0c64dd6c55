// PAT (NCCL 2.23+'s "parallel aggregated trees"): all-gather and reduce-scatter in log2 steps for
// groups of one GPU per node, where a ring's P − 1 network latencies dominate.
//
// What moves (a Bruck schedule, which is how PAT's steps pair ranks: distances 1, 2, 4, ...): P ranks,
// n bytes, chunks of n / P. All-gather step k = 0 .. ⌈log2 P⌉ − 1, distance d = 2^k: every rank sends
// rank − d the min(d, P − d) chunks it holds so far (its own and those of the d − 1 ranks after it),
// which doubles what it holds; reduce-scatter runs the same steps in reverse order (largest first),
// each partial sum travelling back down the same tree. Each rank sends (P − 1) n / P, as in a ring.
//
// Costs, NCCL's tuner (src/graph/tuning.cc, NCCL 2.2x): Simple only; a base latency of 8 µs; a
// log-step latency of the network's PAT latency over 3.5 (14 µs / 3.5 = 4 µs: the aggregation keeps
// several steps in flight); a linear 2.8 µs per rank ("still a linear part": the per-peer work of the
// present implementation); and 0.75 of the ring's bus bandwidth. Uncontended, α_k = 4 µs + route
// latency, β = 1 / (0.75 × efficiency × NIC rate):
//   T = 8 µs + 2.8 µs · P + Σ_k (α_k + min(2^k, P − 2^k) · n β / P)
// (NCCL's formula charges n β rather than (P − 1) n β / P: 1/P apart). NCCL enables PAT only when
// every rank is on its own node; so does the tuner here.
#include "sim/collectives/builtin.hpp"
#include "sim/collectives/steps.hpp"

namespace spsim::sim {

namespace {

// (distance, chunks) of every step for P ranks, in the order `kind` runs them.
std::vector<std::pair<int, int>> schedule(CommKind kind, int p) {
  std::vector<std::pair<int, int>> steps;
  for (int d = 1; d < p; d *= 2) steps.emplace_back(d, std::min(d, p - d));
  if (kind == CommKind::reduce_scatter) std::reverse(steps.begin(), steps.end());
  return steps;
}

class Pat final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::pat; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (g.max_per_node > 1)
      return "PAT runs with one GPU per node (as NCCL enables it); the group has " +
             std::to_string(g.max_per_node) + " on one node";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const int p = run->size();
    const auto steps = schedule(run->call().kind, p);
    const double chunk = run->bytes() / p;
    const bool gather = run->call().kind == CommKind::all_gather;
    StepPlan plan;
    for (int r = 0; r < p; ++r) plan.ranks.push_back(r);
    plan.steps = static_cast<int>(steps.size());
    plan.send_to = [steps, p, gather](int s, int pos) {
      const int d = steps[static_cast<std::size_t>(s)].first;
      return gather ? (pos - d + p) % p : (pos + d) % p;
    };
    plan.bytes = [steps, chunk](int s) { return steps[static_cast<std::size_t>(s)].second * chunk; };
    std::vector<StepPlan> plans;
    plans.push_back(std::move(plan));
    run_step_plans(run, std::move(plans), [run] { run->finish(); });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    Time t = costs.base_latency;
    for (auto [d, chunks] : schedule(call.kind, g.size))
      t += hop_time(g, costs, g.multi_node(), chunks * call.bytes / g.size);
    return t.seconds();
  }
};

}  // namespace

AlgorithmInfo pat_algorithm() {
  return {"pat",
          "NCCL's PAT: all-gather / reduce-scatter in log2(P) steps (Bruck pairs), one GPU per node",
          {CommKind::all_gather, CommKind::reduce_scatter},
          [](const GroupShape& g) { return g.multi_node() && g.max_per_node == 1; },
          [] { return std::make_unique<Pat>(); },
          {}};
}

}  // namespace spsim::sim
