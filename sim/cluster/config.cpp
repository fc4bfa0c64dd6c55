// Names of the cluster config's device and fabric kinds.
#include "sim/cluster/config.hpp"

#include <cstdio>

namespace spsim::sim {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::nvswitch:
      return "nvswitch";
    case DeviceKind::pcie_switch:
      return "pcie_switch";
    case DeviceKind::nic:
      return "nic";
    case DeviceKind::network_switch:
      return "switch";
  }
  return "?";
}

const char* fabric_kind_name(FabricKind k) {
  switch (k) {
    case FabricKind::single_switch:
      return "single_switch";
    case FabricKind::fat_tree:
      return "fat_tree";
    case FabricKind::rail_optimized:
      return "rail_optimized";
  }
  return "?";
}

double leaf_uplink_line_Bps(const ClusterConfig& c) {
  const FabricConfig& f = c.inter_node.fabric;
  return c.inter_node.link.bandwidth_Bps * f.nodes_per_leaf * c.gpus_per_node / f.oversubscription;
}

std::string describe_fabric(const FabricConfig& f) {
  if (f.kind == FabricKind::single_switch) return f.sharp ? "single switch with SHARP" : "";
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%g:1", f.oversubscription);
  const bool rails = f.kind == FabricKind::rail_optimized;
  return std::string(fabric_kind_name(f.kind)) + ", " + std::to_string(f.nodes_per_leaf) + " node" +
         (f.nodes_per_leaf == 1 ? "" : "s") + (rails ? " per group" : " per leaf") +
         (f.oversubscription == 1 ? ", full bisection" : std::string(", ") + ratio + " oversubscribed") +
         (rails && !f.pxn ? ", no PXN" : "");
}

}  // namespace spsim::sim
