// Cluster: the device/link graph (Boost.Graph) built from a ClusterConfig, with cached shortest routes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster/config.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

using DeviceId = int;
using LinkId = int;

struct Device {
  std::string name;  // e.g. "n0.gpu3", "n0.nvswitch", "n1.nic7", "fabric", "leaf1", "spine"
  DeviceKind kind = DeviceKind::gpu;
  int node = 0;
  int local_index = 0;  // GPUs: index within the node
  bool nvls = false;    // NVSwitch with in-switch reduction
};

// One direction of a physical link.
struct Link {
  DeviceId from = 0;
  DeviceId to = 0;
  double capacity_Bps = 0;  // effective bandwidth (line rate x efficiency), bytes per second
  Time latency{};
  LinkClass link_class = LinkClass::network;
};

struct Route {
  std::vector<LinkId> links;                 // in order from source to destination; empty when src == dst
  Time latency{};                            // sum of the links' latencies
  double bottleneck_Bps = 0;                 // min capacity along the route (infinity when empty)
  LinkClass link_class = LinkClass::nvlink;  // the slowest class crossed: network > pcie > nvlink
};

// Built from presets as: per node, GPUs on one NVSwitch or PCIe switch (duplex links of the
// intra-node spec); with nodes > 1 one NIC per GPU (GPU <-> NIC over nic_attach), each NIC on a switch
// over the inter-node spec: the one non-blocking "fabric" switch, or, in a fat tree (inter_node.fabric,
// config.hpp), leaf "leaf<g>" of its node's group, the leaves joined at a "spine" by uplinks of the
// oversubscribed bandwidth. Ranks map onto gpus() in order: node-major, local index minor (explicit
// topologies: listed order).
//
// Routes minimise (latency, hops) with Dijkstra; GPUs are endpoints only (never forward). Routes
// are computed once per source and cached, so route() is not thread-safe.
class Cluster {
 public:
  explicit Cluster(ClusterConfig config);
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  [[nodiscard]] const ClusterConfig& config() const;
  [[nodiscard]] std::size_t num_devices() const;
  [[nodiscard]] std::size_t num_links() const;
  [[nodiscard]] const Device& device(DeviceId d) const;
  [[nodiscard]] const Link& link(LinkId l) const;
  [[nodiscard]] const std::vector<DeviceId>& gpus() const;  // rank placement order
  [[nodiscard]] int num_nodes() const;
  [[nodiscard]] std::optional<DeviceId> find_device(const std::string& name) const;
  // The NVLS-capable switch every GPU of `node` attaches to, if there is one.
  [[nodiscard]] std::optional<DeviceId> nvls_switch(int node) const;
  // Shortest route in (latency, hops), forwarding through no GPU; on a rail-optimized fabric with PXN a
  // GPU's route to another node's GPU on another rail is the NVLink hop to its own node's GPU on that
  // rail followed by that GPU's shortest route. Throws std::logic_error when dst is unreachable (configs
  // are validated first).
  [[nodiscard]] const Route& route(DeviceId src, DeviceId dst) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spsim::sim
