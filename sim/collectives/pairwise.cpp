// Pairwise-exchange all-to-all: P − 1 steps; at step s rank i sends its chunk for rank i + s
// (mod P) and receives from rank i − s.
//
// On a full-bisection switch every step is one uncontended hop per rank, so
//   T = base + (P − 1)(α + nβ/P)      (DESIGN.md §6; Thakur, Rabenseifner & Gropp, IJHPCA 2005)
// A rank moves to the next step when its send has arrived and it has received this step's chunk.
// The tuner counts max_per_node − 1 intra-node steps and the rest across nodes, and across the leaves of
// a fat tree the steps whose flows out of a leaf exceed its uplinks at the uplinks' pace.
#include "sim/collectives/builtin.hpp"
#include "sim/collectives/steps.hpp"

namespace spsim::sim {

namespace {

class Pairwise final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::ring; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape&) const override {
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const int p = run->size();
    StepPlan plan;
    for (int r = 0; r < p; ++r) plan.ranks.push_back(r);
    plan.steps = p - 1;
    plan.send_to = [p](int s, int pos) { return (pos + s + 1) % p; };
    const double chunk = run->bytes() / p;
    plan.bytes = [chunk](int) { return chunk; };
    std::vector<StepPlan> plans;
    plans.push_back(std::move(plan));
    run_step_plans(run, std::move(plans), [run] { run->finish(); });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    const double chunk = call.bytes / g.size;
    const int intra_steps = g.max_per_node - 1, inter_steps = g.size - g.max_per_node;
    double t = 0;
    if (intra_steps > 0) t += intra_steps * hop_s(g, costs, false, chunk);
    if (inter_steps > 0) t += inter_steps * hop_s(g, costs, true, chunk);
    // Across leaves (ranks in blocks of L = leaf_ranks, as presets place them): at step s the ranks of a
    // block send to the block shifted by s, so L minus its overlap with itself leave the leaf together;
    // a step whose uplink share is slower than its NIC hop takes the uplink's time instead.
    if (g.spine_Bps > 0) {
      const int p = g.size, l = g.leaf_ranks;
      const double intra = intra_steps > 0 ? hop_s(g, costs, false, chunk) : 0,
                   inter = hop_s(g, costs, true, chunk);
      for (int step = 1; step < p; ++step) {
        const int stay = std::max(l - step, 0) + (step > p - l ? std::min(l, step + l - p) : 0);
        const double counted = step <= intra_steps ? intra : inter;  // what the sum above took for it
        t += std::max(0.0, spine_s(g, costs, (l - stay) * chunk) - counted);
      }
    }
    return costs.base_latency.seconds() + t;
  }
};

}  // namespace

AlgorithmInfo pairwise_algorithm() {
  return {"pairwise",
          "pairwise-exchange all-to-all: P-1 steps, step s sends to rank+s and receives from rank-s",
          {CommKind::all_to_all},
          [](const GroupShape&) { return true; },
          [] { return std::make_unique<Pairwise>(); },
          {}};
}

}  // namespace spsim::sim
