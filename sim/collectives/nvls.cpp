// NVLS: all-reduce inside the NVSwitch (NVLink SHARP, H100 and later).
//
// Each GPU loads its 1/P slice reduced by the switch (the switch reads that slice from all P GPUs)
// and multicasts the reduced slice back through the switch. Per GPU port and direction that is
// n (its share of every slice read, or every reduced slice received) + n/P (its own reduced
// slice) = n (P + 1) / P bytes, and both directions run concurrently:
//   T = nvls_latency + hop latency + n (P + 1) / (P × efficiency × port bandwidth)
// with NCCL's NVLS efficiency (5/6 by default; the presets set NCCL's per-generation 0.85 Hopper,
// 0.74 Blackwell) and latency (protocol.hpp). Simple protocol only.
#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

class Nvls final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::nvls; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (g.multi_node())
      return "in-switch reduction spans one node's NVSwitch; the group spans " + std::to_string(g.nodes()) +
             " nodes";
    if (!g.nvls_switch)
      return "the group's GPUs are not all attached to an NVSwitch with NVLS (H100/H200/B200 presets have "
             "one)";
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
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
    return estimate(call, g, costs).seconds();
  }

 private:
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
          "in-switch all-reduce (NVLink SHARP) on one node's NVSwitch; Simple protocol",
          {CommKind::all_reduce},
          [](const GroupShape&) { return true; },
          [] { return std::make_unique<Nvls>(); },
          {}};
}

}  // namespace spsim::sim
