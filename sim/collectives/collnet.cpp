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
// NIC transfer starts at once (as NVLS-Tree, nvls_tree.cpp), each GPU's NVLink traffic as one stream to
// and one from its node's switch, and after the last arrives the latency of the last chunk's way
// through the phases is paid:
//   T = max(α_port + 2n(G−1)/G / (e B_port), α_net + n/G / (e B_nic)) + 2 (α_nvl + (G−1) · a)
// with α_port = CollNet's NVLink latency (3.7 µs) + the GPU → node switch link's latency, α_nvl = that
// NVLink latency + the GPU → GPU route latency inside a node, α_net = its network latency (31 µs) + the
// route latency GPU → network switch, a = 0.4 µs per local peer, e = CollNet's
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
    if (auto why = slice_nodes_refusal(g, false); !why.empty()) return why;
    if (g.max_per_node > 1 && g.intra_class != LinkClass::nvlink)
      return "CollNet Direct exchanges slices between a node's GPUs directly and needs NVSwitch (NCCL disables "
             "it elsewhere)";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const GroupShape& g = run->shape();
    const int per = g.max_per_node;
    const double slice = run->bytes() / per, port = 2 * run->bytes() * (per - 1) / per;
    const std::size_t transfers = (per > 1 ? 4 : 2) * static_cast<std::size_t>(run->size());
    auto left = std::make_shared<std::size_t>(transfers);
    const Time tail = tail_latency(g, run->costs());
    auto arrived = [run, left, tail] {
      if (--*left == 0) run->after(tail, [run] { run->finish(); });
    };
    for (const auto& m : g.node_members)
      for (int r : m) {
        // The reduce-scatter's and the all-gather's slices to and from the G − 1 local peers, through the
        // GPU's port to the node's switch: one stream each way (so the analytical model, which does
        // not share links, sees the port's load as the flow model does).
        if (per > 1) {
          const Route& to_peer = run->cluster().route(run->device(r), run->device(m[r == m[0] ? 1 : 0]));
          const DeviceId node_switch = run->cluster().link(to_peer.links.front()).to;
          for (bool up : {true, false}) run->transfer_device(r, node_switch, up, port, arrived);
        }
        for (bool up : {true, false}) run->transfer_device(r, *g.sharp_switch, up, slice, arrived);
      }
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    const int per = g.max_per_node;
    const Time net = sharp_hop_time(g, costs, call.bytes / per);
    const Time port = per > 1 ? costs.step(LinkClass::nvlink) + g.intra_switch_latency +
                                    Time::from_seconds(2 * call.bytes * (per - 1) / per /
                                                       (costs.efficiency_on(g.intra_class) * g.intra_Bps))
                              : Time{};
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
