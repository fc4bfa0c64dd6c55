// Ring reduce-scatter, all-gather and all-reduce (= reduce-scatter then all-gather).
//
// P ranks, n bytes: at each of S steps every rank sends a chunk of n / P to its successor, the
// chunk it received at the previous step (plus its own contribution when reducing).
// S = P − 1 for reduce-scatter and all-gather, 2(P − 1) for all-reduce. Uncontended, with
// α = protocol step latency + route latency and β = 1 / (efficiency × bandwidth):
//   T_RS = T_AG = base + (P − 1)(α + nβ/P),   T_AR = base + 2(P − 1)(α + nβ/P)
// (DESIGN.md §6; the all-reduce is bandwidth-optimal, Patarasuk & Yuan, JPDC 2009).
//
// Channels: across nodes, C = (ranks per node) rings run in parallel on n / C each; ring c visits
// each node's members rotated by c, so it leaves node a from local member c − 1 and enters node
// a + 1 at member c. Every NIC then carries exactly one ring, as NCCL's rings do on rail-optimized
// clusters. The tuner's estimate takes each step as its slowest hop:
//   step = max(α_intra + n β_intra / P,  α_inter + n β_inter / (C P))   (C rings share an NVLink port),
// and across the leaves of a fat tree at least α_inter + n β_uplinks / P (the C hops leaving a leaf).
//
// Alone on a preset cluster across 3+ identical nodes the ring runs node 0's positions only
// (CollectiveRun::can_fold_nodes): rotating the nodes maps the rings onto themselves, so every
// node's hops happen at node 0's times. 1,024 ranks then cost what 8 do times the step count.
#include <algorithm>

#include "sim/collectives/builtin.hpp"
#include "sim/collectives/steps.hpp"

namespace spsim::sim {

namespace {

int ring_steps(CommKind kind, int p) {
  return kind == CommKind::all_reduce ? 2 * (p - 1) : p - 1;
}

class Ring final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::ring; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape&) const override {
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const GroupShape& g = run->shape();
    const int p = g.size;
    const int channels = g.channels;
    const double chunk = run->bytes() / (static_cast<double>(channels) * p);
    // Node-symmetric and alone: node 0's positions only; node 0's last position sends to node 1's
    // first, which stands for node 0's first (CollectiveRun::fold_nodes).
    const bool fold = run->can_fold_nodes();
    if (fold) run->fold_nodes();
    std::vector<StepPlan> plans;
    for (int c = 0; c < channels; ++c) {
      StepPlan plan;
      for (const auto& members : g.node_members) {
        const auto m = static_cast<int>(members.size());
        for (int i = 0; i < m; ++i) plan.ranks.push_back(members[static_cast<std::size_t>((i + c) % m)]);
        if (fold) break;
      }
      const auto positions = static_cast<int>(plan.ranks.size());
      plan.steps = ring_steps(run->call().kind, p);
      plan.send_to = [positions](int, int pos) { return (pos + 1) % positions; };
      plan.bytes = [chunk](int) { return chunk; };
      if (fold) {
        const auto& next = g.node_members[1];
        const int entry = next[static_cast<std::size_t>(c % positions)];
        plan.send_rank = [entry, ranks = plan.ranks](int, int pos) {
          return pos + 1 == static_cast<int>(ranks.size()) ? entry : ranks[static_cast<std::size_t>(pos + 1)];
        };
      }
      plans.push_back(std::move(plan));
    }
    run_step_plans(run, std::move(plans), [run] { run->finish(); });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    const double n = call.bytes, p = g.size;
    double step = 0;
    if (g.max_per_node > 1) step = hop_s(g, costs, false, n, p);
    if (g.multi_node()) step = std::max(step, hop_s(g, costs, true, n, g.channels * p));
    // Across leaves the rings run in node order, so each leaf's uplinks carry the C channels' hops out
    // of its last node: n / P per step.
    step = std::max(step, spine_s(g, costs, n / p));
    return costs.base_latency.seconds() + ring_steps(call.kind, g.size) * step;
  }
};

}  // namespace

AlgorithmInfo ring_algorithm() {
  return {"ring",
          "ring reduce-scatter / all-gather, all-reduce = reduce-scatter + all-gather; one ring per NIC "
          "across nodes",
          {CommKind::all_reduce, CommKind::reduce_scatter, CommKind::all_gather},
          [](const GroupShape&) { return true; },
          [] { return std::make_unique<Ring>(); },
          {}};
}

}  // namespace spsim::sim
