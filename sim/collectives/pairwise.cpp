// Pairwise-exchange all-to-all: P − 1 steps; at step s rank i sends its chunk for rank i + s
// (mod P) and receives from rank i − s.
//
// On a full-bisection switch every step is one uncontended hop per rank, so
//   T = base + (P − 1)(α + nβ/P)      (DESIGN.md §6; Thakur, Rabenseifner & Gropp, IJHPCA 2005)
// A rank moves to the next step when its send has arrived and it has received this step's chunk.
// The tuner counts max_per_node − 1 intra-node steps and the rest across nodes.
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
