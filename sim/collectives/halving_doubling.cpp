// Recursive halving (reduce-scatter) and recursive doubling (all-gather); all-reduce = both.
//
// P = 2^k ranks. Reduce-scatter: at step j = 1..k rank i exchanges n / 2^j bytes with rank
// i XOR P / 2^j; all-gather runs the steps in reverse (partner i XOR 2^(j−1), n 2^(j−1) / P bytes).
// Uncontended:  T_RS = T_AG = base + log2(P) α + (P − 1) nβ / P,   T_AR = 2 T_RS − base
// (Rabenseifner's algorithm; Thakur, Rabenseifner & Gropp, IJHPCA 2005).
#include <bit>

#include "sim/collectives/builtin.hpp"
#include "sim/collectives/steps.hpp"

namespace spsim::sim {

namespace {

// (partner distance, bytes) of every step of `kind` for P ranks and n bytes.
std::vector<std::pair<int, double>> schedule(CommKind kind, int p, double n) {
  std::vector<std::pair<int, double>> rs, ag;
  for (int d = p / 2; d >= 1; d /= 2) rs.emplace_back(d, n * d / p);
  for (int d = 1; d < p; d *= 2) ag.emplace_back(d, n * d / p);
  if (kind == CommKind::reduce_scatter) return rs;
  if (kind == CommKind::all_gather) return ag;
  rs.insert(rs.end(), ag.begin(), ag.end());
  return rs;
}

class HalvingDoubling final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::ring; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (!std::has_single_bit(static_cast<unsigned>(g.size)))
      return "needs a power-of-two number of ranks, got " + std::to_string(g.size);
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const auto steps = schedule(run->call().kind, run->size(), run->bytes());
    StepPlan plan;
    for (int r = 0; r < run->size(); ++r) plan.ranks.push_back(r);
    plan.steps = static_cast<int>(steps.size());
    plan.send_to = [steps](int s, int pos) { return pos ^ steps[static_cast<std::size_t>(s)].first; };
    plan.bytes = [steps](int s) { return steps[static_cast<std::size_t>(s)].second; };
    std::vector<StepPlan> plans;
    plans.push_back(std::move(plan));
    run_step_plans(run, std::move(plans), [run] { run->finish(); });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    return estimate(call, g, costs).seconds();
  }

 private:
  [[nodiscard]] static Time estimate(const CollectiveCall& call, const GroupShape& g,
                                     const ProtocolCosts& costs) {
    // Rank 0 and its partner at distance d share a node iff d is below the ranks per node
    // (node-major rank order on uniform nodes).
    Time t = costs.base_latency;
    for (auto [d, bytes] : schedule(call.kind, g.size, call.bytes))
      t += hop_time(g, costs, g.multi_node() && d >= g.max_per_node, bytes);
    return t;
  }
};

}  // namespace

AlgorithmInfo halving_doubling_algorithm() {
  return {"halving_doubling",
          "recursive halving reduce-scatter / doubling all-gather (Rabenseifner), power-of-two groups",
          {CommKind::all_reduce, CommKind::reduce_scatter, CommKind::all_gather},
          nullptr,
          [] { return std::make_unique<HalvingDoubling>(); },
          {"rhd"}};
}

}  // namespace spsim::sim
