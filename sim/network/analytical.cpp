// AnalyticalNetwork: per-hop α-β without contention, for huge what-ifs and as a cross-check.
#include "sim/network/network.hpp"

namespace spsim::sim {

namespace {

// time = Σ_hops latency + extra + n / (efficiency × min_hops bandwidth): the message is pipelined
// through the hops (cut-through), so only the slowest hop's bandwidth counts; other traffic is
// ignored. For an uncontended transfer this equals the flow model's time exactly.
class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(Engine& engine, const Cluster& cluster) : engine_(engine), cluster_(cluster) {}
  void transfer(DeviceId src, DeviceId dst, double bytes, Done done,
                const TransferOptions& options) override {
    ++stats_.transfers;
    const Route& r = options.route != nullptr ? *options.route : cluster_.route(src, dst);
    Time t = r.latency + options.extra_latency;
    if (!r.links.empty() && bytes > 0) t += Time::from_seconds(bytes / options.efficiency / r.bottleneck_Bps);
    engine_.schedule_after(t, [this, done = std::move(done)] {
      ++stats_.arrived;
      done();
    });
  }
  [[nodiscard]] std::size_t active_flows() const override { return 0; }
  [[nodiscard]] NetworkMode mode() const override { return NetworkMode::analytical; }
  [[nodiscard]] const NetworkStats& stats() const override { return stats_; }
  [[nodiscard]] const Cluster& cluster() const override { return cluster_; }
  [[nodiscard]] Engine& engine() override { return engine_; }

 private:
  Engine& engine_;
  const Cluster& cluster_;
  NetworkStats stats_;
};

}  // namespace

std::unique_ptr<Network> make_analytical_network(Engine& engine, const Cluster& cluster) {
  return std::make_unique<AnalyticalNetwork>(engine, cluster);
}

}  // namespace spsim::sim
