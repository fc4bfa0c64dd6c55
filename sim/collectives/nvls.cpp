// NVLS: all-reduce inside the NVSwitch (NVLink SHARP, H100 and later), and across nodes when the network's
// switch reduces too (InfiniBand SHARP: NCCL runs NVLS over several nodes only with CollNet enabled).
//
// One node: each GPU loads its 1/P slice reduced by the switch (the switch reads that slice from all P
// GPUs) and multicasts the reduced slice back through the switch. Per GPU port and direction that is
// n (its share of every slice read, or every reduced slice received) + n/P (its own reduced
// slice) = n (P + 1) / P bytes, and both directions run concurrently:
//   T = nvls_latency + hop latency + n (P + 1) / (P × efficiency × port bandwidth)
// with NCCL's NVLS efficiency (5/6 by default; the presets set NCCL's per-generation 0.85 Hopper,
// 0.74 Blackwell) and latency (protocol.hpp). Simple protocol only.
//
// Several nodes of G GPUs on a SHARP switch: local GPU s owns slice s (n/G). Each node's NVSwitch
// reduces slice s into GPU s (n up, n/G down per port, as NVLS-Tree's first phase), GPU s sends it up
// its NIC to the network switch, which reduces the N nodes' slices and sends the result down (n/G per
// NIC and direction), and GPU s multicasts it through its NVSwitch (n/G up, n down). Pipelined in
// chunks, the phases stream concurrently; as NVLS-Tree (nvls_tree.cpp), a fluid:
//   T = max(α_nvls + n (G+1)/G / (e_nvls B_port), α_net + n/G / (e_net B_nic)) + α_nvls
// with α_nvls = NVLS latency + GPU → NVSwitch route latency, α_net = NVLS's network latency + GPU →
// network switch route latency, e_net the network efficiency of the NVLS family (protocol.cpp); the
// last α_nvls is the multicast of the last chunk.
#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

class Nvls final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::nvls; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (g.multi_node()) {
      if (!g.sharp_switch)
        return "in-switch reduction spans one node's NVSwitch unless the network's switch reduces too "
               "(cluster.inter_node.fabric.sharp, --sharp); the group spans " +
               std::to_string(g.nodes()) + " nodes (nvls_tree joins them by trees)";
      if (g.max_per_node < 2) return "one GPU per node has nothing to reduce in the NVSwitch (use collnet_direct)";
      return slice_nodes_refusal(g, true);
    }
    if (!g.nvls_switch)
      return "the group's GPUs are not all attached to an NVSwitch with NVLS (H100/H200/B200 presets have "
             "one)";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    if (run->shape().multi_node()) return run_sharp(run);
    const int p = run->size();
    const double bytes = run->bytes() * (p + 1) / p;
    const DeviceId sw = *run->shape().nvls_switch;
    auto left = std::make_shared<int>(2 * p);
    for (int r = 0; r < p; ++r)
      for (bool up : {true, false})
        run->transfer_device(r, sw, up, bytes, [run, left] {
          if (--*left == 0) run->finish();
        });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    if (g.multi_node()) {
      const int per = g.max_per_node;
      const Time nvl = costs.step(LinkClass::nvlink) + g.nvls_hop_latency;
      const Time port = nvl + Time::from_seconds(call.bytes * (per + 1) / per / (costs.efficiency * g.intra_Bps));
      const Time net = sharp_hop_time(g, costs, call.bytes / per);
      return (std::max(port, net) + nvl).seconds();
    }
    return estimate(call, g, costs).seconds();
  }

 private:
  static void run_sharp(const std::shared_ptr<CollectiveRun>& run) {
    const GroupShape& g = run->shape();
    const int per = g.max_per_node;
    const double port_bytes = run->bytes() * (per + 1) / per, nic_bytes = run->bytes() / per;
    auto left = std::make_shared<std::size_t>(4 * static_cast<std::size_t>(run->size()));
    const Time tail = run->costs().step(LinkClass::nvlink) + g.nvls_hop_latency;
    auto arrived = [run, left, tail] {
      if (--*left == 0) run->after(tail, [run] { run->finish(); });
    };
    for (int v = 0; v < g.nodes(); ++v)
      for (int r : g.node_members[static_cast<std::size_t>(v)])
        for (bool up : {true, false}) {
          run->transfer_device(r, g.node_nvls_switches[static_cast<std::size_t>(v)], up, port_bytes, arrived);
          run->transfer_device(r, *g.sharp_switch, up, nic_bytes, arrived);
        }
  }

  [[nodiscard]] static Time estimate(const CollectiveCall& call, const GroupShape& g,
                                     const ProtocolCosts& costs) {
    const double bytes = call.bytes * (g.size + 1) / g.size;
    return costs.base_latency + costs.step(LinkClass::nvlink) + g.nvls_hop_latency +
           Time::from_seconds(bytes / (costs.efficiency * g.intra_Bps));
  }
};

}  // namespace

AlgorithmInfo nvls_algorithm() {
  return {"nvls",
          "in-switch all-reduce (NVLink SHARP) on one node's NVSwitch, or across nodes whose network switch "
          "reduces too (InfiniBand SHARP); Simple protocol",
          {CommKind::all_reduce},
          [](const GroupShape& g) { return !g.multi_node() || (g.sharp_switch.has_value() && g.max_per_node > 1); },
          [] { return std::make_unique<Nvls>(); },
          {}};
}

}  // namespace spsim::sim
