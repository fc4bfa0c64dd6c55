// Direct point-to-point: every message posted at once (NCCL's grouped send/recv).
//
// all_to_all: each rank sends n/P to every other rank simultaneously; the flows share each
// rank's links max-min fairly, so on a full-bisection switch T = base + α + (P − 1) nβ / P.
// sendrecv: rank i sends n bytes to rank i + offset (mod P): T = base + α + nβ
// (nccl-tests' sendrecv pattern; its bus bandwidth factor is 1).
#include <algorithm>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

class Direct final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::ring; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape&) const override {
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const int p = run->size();
    const bool a2a = run->call().kind == CommKind::all_to_all;
    const int offset = ((run->call().peer_offset % p) + p) % p;
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < p; ++i) {
      if (a2a) {
        for (int s = 1; s < p; ++s) pairs.emplace_back(i, (i + s) % p);
      } else if (offset != 0) {
        pairs.emplace_back(i, (i + offset) % p);
      }
    }
    if (pairs.empty()) {
      run->finish();
      return;
    }
    const double bytes = a2a ? run->bytes() / p : run->bytes();
    auto left = std::make_shared<std::size_t>(pairs.size());
    for (auto [from, to] : pairs)
      run->transfer(from, to, bytes, [run, left] {
        if (--*left == 0) run->finish();
      });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    if (call.kind != CommKind::all_to_all)
      return costs.base_latency.seconds() + hop_s(g, costs, g.multi_node(), call.bytes);
    const double chunk = call.bytes / g.size;
    double t = 0;
    if (g.max_per_node > 1) t = hop_s(g, costs, false, (g.max_per_node - 1) * chunk);
    if (g.multi_node()) t = std::max(t, hop_s(g, costs, true, (g.size - g.max_per_node) * chunk));
    // Across leaves: the busiest leaf's ranks each send to every rank under other leaves.
    t = std::max(t, spine_s(g, costs, g.leaf_ranks * static_cast<double>(g.size - g.leaf_ranks) * chunk));
    return costs.base_latency.seconds() + t;
  }
};

}  // namespace

AlgorithmInfo direct_algorithm() {
  return {"direct",
          "all messages posted at once: all_to_all to every peer, sendrecv to rank+offset",
          {CommKind::all_to_all, CommKind::sendrecv},
          [](const GroupShape&) { return true; },
          [] { return std::make_unique<Direct>(); },
          {}};
}

}  // namespace spsim::sim
