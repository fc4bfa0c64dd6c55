// HardwareModel: the closed forms' view of a cluster through the simulator's cost functions.
#include "analysis/closed_form/hardware_model.hpp"

#include <algorithm>

#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/engine.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis {

namespace {
const sim::ClusterConfig& cluster_of(const Config& c) {
  if (!c.cluster)
    throw InputError("cluster", "the closed form needs a cluster, e.g. {\"preset\": \"dgx-a100\"}");
  return *c.cluster;
}
}  // namespace

struct HardwareModel::Impl {
  Config config;
  sim::Cluster cluster;
  sim::Engine engine;
  std::unique_ptr<sim::Network> network;
  std::unique_ptr<sim::Collectives> collectives;
  std::vector<sim::DeviceId> ranks;
  sim::ComputeModel compute;

  explicit Impl(const Config& c)
      : config(c),
        cluster(cluster_of(c)),
        compute(cluster.config().gpu, c.workload.dtype, "workload.dtype", c.simulation.attention_kernel) {
    const auto& gpus = cluster.gpus();
    const int p = c.strategy.degree;
    if (static_cast<std::size_t>(p) > gpus.size())
      throw InputError("strategy.degree", "degree " + std::to_string(p) + " exceeds the cluster's " +
                                              std::to_string(gpus.size()) + " GPUs");
    ranks.assign(gpus.begin(), gpus.begin() + p);
    network = sim::make_network(sim::NetworkMode::analytical, engine, cluster);
    collectives = std::make_unique<sim::Collectives>(*network);
  }

  // One sendrecv of `bytes` from `src` to `dst`: the simulator's own estimate of Collectives::send.
  [[nodiscard]] double pass_s(sim::DeviceId src, sim::DeviceId dst, double bytes) const {
    return collectives->send_estimate_s(src, dst, bytes,
                                        config.collectives.protocol.value_or(sim::Protocol::simple));
  }

  // The devices of SP ranks `group` (group order).
  [[nodiscard]] std::vector<sim::DeviceId> devices(const std::vector<int>& group) const {
    std::vector<sim::DeviceId> out;
    for (int r : group) out.push_back(ranks.at(static_cast<std::size_t>(r)));
    return out;
  }

  // The simulator's estimate of the algorithm its tuner runs (or the one the config names).
  [[nodiscard]] double collective_s(rt::CommKind kind, const std::string& algorithm, double bytes,
                                    const std::vector<sim::DeviceId>& members) const {
    if (members.size() < 2) return 0;  // a group of one completes at once
    return collectives
        ->choose(sim::CollectiveCall{kind, members, bytes, algorithm, config.collectives.protocol})
        .predicted_s;
  }
};

HardwareModel::HardwareModel(const Config& config) : impl_(std::make_unique<Impl>(config)) {}
HardwareModel::~HardwareModel() = default;

int HardwareModel::ranks() const {
  return static_cast<int>(impl_->ranks.size());
}
double HardwareModel::gpu_memory_bytes() const {
  return impl_->cluster.config().gpu.hbm_bytes;
}

double HardwareModel::op_time_s(const rt::OpCost& cost) const {
  return impl_->compute.duration_s(cost.op_class, cost.flops, static_cast<double>(cost.bytes()),
                                   cost.kernels);
}

double HardwareModel::ring_pass_s(double bytes, const std::vector<int>& group) const {
  const auto r = impl_->devices(group);
  double worst = 0;
  for (std::size_t i = 0; i < r.size(); ++i)
    worst = std::max(worst, impl_->pass_s(r[i], r[(i + 1) % r.size()], bytes));
  return worst;
}

double HardwareModel::collective_s(rt::CommKind kind, double bytes, const std::vector<int>& group) const {
  return impl_->collective_s(kind, impl_->config.collectives.of(kind), bytes, impl_->devices(group));
}

}  // namespace spsim::analysis
