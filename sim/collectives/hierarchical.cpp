// Hierarchical all-reduce: ring reduce-scatter inside each node, ring all-reduce of each 1/L
// shard across nodes (one ring per local index, i.e. per rail), ring all-gather inside each node.
//
// N nodes of L ranks each: T = 2 T_ring_RS(L, n) + T_ring_AR(N, n / L), each phase waiting for
// the previous one on every node (no pipelining across phases). Explicit use only: NCCL's tuner
// has no such algorithm.
#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

class Hierarchical final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::ring; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (!g.multi_node()) return "the group is on a single node (use ring)";
    if (g.min_per_node != g.max_per_node) return "needs the same number of ranks on every node";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const GroupShape& g = run->shape();
    auto devices = [&](const std::vector<int>& ranks) {
      std::vector<DeviceId> out;
      for (int r : ranks) out.push_back(run->device(r));
      return out;
    };
    auto intra = [&](CommKind kind) {
      std::vector<CollectiveCall> calls;
      for (const auto& m : g.node_members)
        calls.push_back({kind, devices(m), run->bytes(), "ring", std::nullopt, 1});
      return calls;
    };
    std::vector<CollectiveCall> across;
    for (int l = 0; l < g.max_per_node; ++l) {
      std::vector<int> ranks;
      for (const auto& m : g.node_members) ranks.push_back(m[static_cast<std::size_t>(l)]);
      across.push_back(
          {CommKind::all_reduce, devices(ranks), run->bytes() / g.max_per_node, "ring", std::nullopt, 1});
    }
    auto phase3 = [run, calls = intra(CommKind::all_gather)] {
      run_phase(run, calls, [run] { run->finish(); });
    };
    auto phase2 = [run, across, phase3] { run_phase(run, across, phase3); };
    run_phase(run, intra(CommKind::reduce_scatter), phase2);
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    return estimate(call, g, costs).seconds();
  }

 private:
  [[nodiscard]] static Time estimate(const CollectiveCall& call, const GroupShape& g,
                                     const ProtocolCosts& costs) {
    const double l = g.max_per_node, nn = g.nodes();
    const Time intra =
        l > 1 ? static_cast<std::int64_t>(l - 1) * hop_time(g, costs, false, call.bytes / l) : Time{};
    const Time inter =
        static_cast<std::int64_t>(2 * (nn - 1)) * hop_time(g, costs, true, call.bytes / (l * nn));
    return 3 * costs.base_latency + 2 * intra + inter;
  }

 private:
  static void run_phase(const std::shared_ptr<CollectiveRun>& run, const std::vector<CollectiveCall>& calls,
                        std::function<void()> next) {
    auto left = std::make_shared<std::size_t>(calls.size());
    auto shared_next = std::make_shared<std::function<void()>>(std::move(next));
    for (const auto& c : calls)
      run->start_sub(c, [left, shared_next] {
        if (--*left == 0) (*shared_next)();
      });
  }
};

}  // namespace

AlgorithmInfo hierarchical_algorithm() {
  return {"hierarchical",
          "intra-node ring reduce-scatter, inter-node ring all-reduce per rail, intra-node all-gather",
          {CommKind::all_reduce},
          nullptr,
          [] { return std::make_unique<Hierarchical>(); },
          {}};
}

}  // namespace spsim::sim
