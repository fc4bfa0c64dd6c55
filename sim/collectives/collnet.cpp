// CollNet Direct: all-reduce across nodes through a network switch that reduces (InfiniBand SHARP; NCCL's
// COLLNET_DIRECT with its SHARP plugin, NCCL_COLLNET_ENABLE=1).
//
// On N nodes of G GPUs (one NIC each) and n bytes: (1) the node reduce-scatters over NVLink, each GPU
// sending its slice for every local peer straight to it, so GPU s holds slice s (n/G) reduced over its
// node; (2) GPU s sends that slice up its NIC to the switch, which reduces the N slices it receives on
// rail s and sends the result down to each of them; (3) the node all-gathers the reduced slices over
// NVLink. Per NVLink port and direction that is 2n(G−1)/G (the reduce-scatter's and the all-gather's
// slices), per NIC and direction n/G: half of what a ring across nodes moves per NIC, 2n(N−1)/(NG).
//
// NCCL pipelines the phases in chunks, so they stream concurrently: modelled as a fluid, every port and
// NIC transfer starts at once (as NVLS-Tree, nvls_tree.cpp), and after the last arrives the latency of
// the last chunk's way through the phases is paid:
//   T = max(α_nvl + 2n(G−1)/G / (e B_port), α_net + n/G / (e B_nic)) + 2 (α_nvl + (G−1) · a)
// with α_nvl = CollNet's NVLink latency (3.7 µs) + the intra-node route latency, α_net = its network
// latency (31 µs) + the route latency GPU → switch, a = 0.4 µs per local peer, e = CollNet's
// efficiency (0.85 from compute capability 9.0): at n = 0 that is NCCL's CollNet Direct latency,
// 2 (intraLat + (G−1) · 0.4) + interLat (src/graph/tuning.cc). The tuner and the simulation use the same
// expression (tests/sim/collectives_closed_form_test.cpp). With one GPU per node only the network
// phase is left. No measured SHARP row is in the data: the algorithm is checked against its closed form
// and NCCL's latency, not against a measurement.
#include <algorithm>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

Time tail_latency(const GroupShape& g, const ProtocolCosts& costs) {
  const int peers = g.max_per_node - 1;
  if (peers == 0) return Time{};
  return 2 * (costs.step(LinkClass::nvlink) + g.intra_latency) + 2 * peers * costs.peer_latency;
}

class CollNetDirect final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::collnet; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (!g.multi_node()) return "CollNet joins nodes through the network's switch; the group spans one node";
    if (!g.sharp_switch)
      return "the fabric's switch does not reduce (cluster.inter_node.fabric.sharp: true, or --sharp, on a "
             "single_switch fabric)";
    if (g.min_per_node != g.max_per_node)
      return "the nodes hold different numbers of the group's GPUs (" + std::to_string(g.min_per_node) +
             " to " + std::to_string(g.max_per_node) + "); slices need the same count on every node";
    if (g.max_per_node > 1 && g.intra_class != LinkClass::nvlink)
      return "CollNet Direct exchanges slices between a node's GPUs directly and needs NVSwitch (NCCL disables "
             "it elsewhere)";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const GroupShape& g = run->shape();
    const int per = g.max_per_node;
    const double slice = run->bytes() / per;
    std::size_t transfers = 2 * static_cast<std::size_t>(run->size());  // up and down each NIC
    for (const auto& m : g.node_members) transfers += m.size() * (m.size() - 1);
    auto left = std::make_shared<std::size_t>(transfers);
    const Time tail = tail_latency(g, run->costs());
    auto arrived = [run, left, tail] {
      if (--*left == 0) run->after(tail, [run] { run->finish(); });
    };
    // The reduce-scatter's and the all-gather's slices between each ordered pair of local GPUs stream
    // together: 2n/G from a to b.
    for (const auto& m : g.node_members)
      for (int a : m)
        for (int b : m)
          if (a != b) run->transfer(a, b, 2 * slice, arrived);
    for (int r = 0; r < run->size(); ++r)
      for (bool up : {true, false}) run->transfer_device(r, *g.sharp_switch, up, slice, arrived);
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    const int per = g.max_per_node;
    const Time net = costs.step(g.inter_class) + g.sharp_hop_latency +
                     Time::from_seconds(call.bytes / per / (costs.efficiency_on(g.inter_class) * g.inter_Bps));
    const Time port = per > 1 ? hop_time(g, costs, false, 2 * call.bytes * (per - 1) / per) : Time{};
    return (std::max(port, net) + tail_latency(g, costs)).seconds();
  }
};

}  // namespace

AlgorithmInfo collnet_direct_algorithm() {
  return {"collnet_direct",
          "all-reduce across nodes with in-network reduction (InfiniBand SHARP): reduce-scatter inside each node, "
          "each GPU's slice reduced by the switch, all-gather inside each node, pipelined; Simple protocol",
          {CommKind::all_reduce},
          [](const GroupShape& g) { return g.multi_node() && g.sharp_switch.has_value(); },
          [] { return std::make_unique<CollNetDirect>(); },
          {}};
}

}  // namespace spsim::sim
