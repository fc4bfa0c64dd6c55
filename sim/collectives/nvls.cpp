// NVLS: all-reduce inside the NVSwitch (NVLink SHARP, H100 and later), and across nodes when the network's
// switch reduces too (InfiniBand SHARP: NCCL runs NVLS over several nodes only with CollNet enabled).
//
// One node: each GPU loads its 1/P slice reduced by the switch (the switch reads that slice from all P
// GPUs) and multicasts the reduced slice back through the switch. Per GPU port and direction that is
// n (its share of every slice read, or every reduced slice received) + n/P (its own reduced
// slice) = n (P + 1) / P bytes, and both directions run concurrently:
//   T = nvls_latency + hop latency + n (P + 1) / (P × efficiency × port bandwidth)
// with NCCL's NVLS efficiency (5/6 by default; NVLS-Tree's and SHARP's phases below use the presets'
// per-generation 0.85 Hopper, 0.74 Blackwell) and latency (protocol.hpp). Simple only.
//
// The channel pipeline (presets with tuning.nvls.channels): NCCL's one-node NVLS kernel
// (src/device/all_reduce.h) runs C channels (16 on Hopper, 32 on Blackwell in NCCL 2.18-2.26), each
// one CTA whose scatter, reduce and gather warps walk the channel's share n/C in loops of P chunks of
// c bytes, one (peer, chunk) step at a time: wait for that peer's buffer slot, copy or reduce c bytes,
// post the slot. Each step pays a fixed synchronisation cost s (flag round trips across the switch)
// on top of streaming at the channel's rate b; the three stages (scatter, in-switch reduce and
// multicast, gather) fill and drain over two more steps, so the kernel needs
//   T_channels = (n / (C c) + 2) × (s + c / b),
// whatever P (a loop holds P steps of c bytes each). NCCL picks c from the call's size against
// C × P concurrent chunks (src/enqueue.cc, unchanged from 2.18 to 2.26): 128 KiB, 64 KiB below
// 64 C P × 128 KiB, 32 KiB below 8 C P × 64 KiB, 16 KiB below 2 C P × 32 KiB. So a 72-GPU rack
// runs 1 GB in 32 KiB chunks and 2 GB on in 64 KiB where 8 GPUs use 128 KiB: the model steps up
// between 1 and 2 GB and tops out near 8 GPUs' bus bandwidth, as measured, where the port-traffic
// bound alone gives a flat curve 25% above 8 GPUs'. (The measured rise from 512 MB to 1 GB is not
// reproduced.)
// The port then carries n (P + 1) / P at the link's payload rate (efficiency 1), and
//   T = nvls_latency + hop latency + max(n (P + 1) / (P × port bandwidth), T_channels).
// s and b are fitted per GPU generation (each preset names its rows); C and the largest chunk are
// NCCL's defaults.
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

double nvls_chunk_bytes(double bytes, int channels, int heads, double max_chunk_bytes) {
  const double concurrent = static_cast<double>(channels) * heads;
  double c = max_chunk_bytes;
  if (bytes < 64 * concurrent * c && c > 65536) c = 65536;
  if (bytes < 8 * concurrent * c && c > 32768) c = 32768;
  if (bytes < 2 * concurrent * c && c > 16384) c = 16384;
  return c;
}

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
    // The channels' bound, from the start: the streams end no earlier than the kernel's pipeline.
    const auto& pipe = run->costs().nvls_pipeline;
    const Time floor = pipe.active() ? run->now() + run->costs().step(LinkClass::nvlink) +
                                           run->shape().nvls_hop_latency + channel_time(run->bytes(), p, pipe)
                                     : Time{};
    for (int r = 0; r < p; ++r)
      for (bool up : {true, false})
        run->transfer_device(r, sw, up, bytes, [run, left, floor] {
          if (--*left != 0) return;
          if (run->now() < floor)
            run->after(floor - run->now(), [run] { run->finish(); });
          else
            run->finish();
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
    Time stream = Time::from_seconds(bytes / (costs.efficiency * g.intra_Bps));
    if (costs.nvls_pipeline.active())
      stream = std::max(stream, channel_time(call.bytes, g.size, costs.nvls_pipeline));
    return costs.base_latency + costs.step(LinkClass::nvlink) + g.nvls_hop_latency + stream;
  }

  // T_channels of the header for an all-reduce of `bytes` on P GPUs.
  [[nodiscard]] static Time channel_time(double bytes, int p, const ProtocolCosts::NvlsPipeline& pipe) {
    const double c = nvls_chunk_bytes(bytes, pipe.channels, p, pipe.max_chunk_bytes);
    const double steps = bytes / (pipe.channels * c) + 2;
    return Time::from_seconds(steps * (pipe.peer_sync.seconds() + c / pipe.channel_Bps));
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
