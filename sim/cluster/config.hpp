// ClusterConfig: the typed `cluster` section of an experiment (DESIGN.md §7); analysis/config/cluster.hpp
// parses it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster/hardware.hpp"
#include "sim/collectives/fitted.hpp"
#include "sim/collectives/protocol.hpp"

namespace spsim::sim {

enum class DeviceKind : std::uint8_t { gpu, nvswitch, pcie_switch, nic, network_switch };
// JSON names: gpu, nvswitch, pcie_switch, nic, switch.
[[nodiscard]] const char* device_kind_name(DeviceKind k);

struct TopologyDevice {
  std::string id;
  DeviceKind kind = DeviceKind::gpu;
  int node = 0;       // which node (server) it belongs to; GPUs of one node share its intra-node fabric
  bool nvls = false;  // an NVSwitch able to reduce in the switch (NVLink SHARP)
};

struct TopologyLink {
  std::string from;
  std::string to;
  LinkSpec spec;       // bandwidth, efficiency, latency and class of this link
  bool duplex = true;  // also add the reverse direction with the same spec
};

// An explicit device/link list; GPUs take ranks in listed order.
struct ExplicitTopology {
  std::vector<TopologyDevice> devices;
  std::vector<TopologyLink> links;
};

enum class IntraFabric : std::uint8_t { nvswitch, pcie };

struct IntraNodeConfig {
  IntraFabric fabric = IntraFabric::nvswitch;  // every GPU links to one switch of this kind
  LinkSpec link;                               // GPU <-> switch, per GPU per direction (all its NVLinks)
  bool nvls = false;                           // the NVSwitch reduces in the switch (H100 and later)
};

// Multi-node: one NIC per GPU (rail-optimized), every NIC on one non-blocking switch fabric.
struct InterNodeConfig {
  LinkSpec link;        // NIC <-> fabric switch
  LinkSpec nic_attach;  // GPU <-> its NIC (PCIe)
};

struct ClusterConfig {
  std::string name;  // preset name, or "custom"
  std::string description;
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  IntraNodeConfig intra_node;
  InterNodeConfig inter_node;
  ProtocolTable tuning = nccl_protocol_table();
  std::optional<ExplicitTopology> topology;  // when set, replaces nodes/gpus_per_node/intra/inter
  CollectiveFits collective_fits;            // measured per-collective α-β (sim/collectives/fitted.hpp)
};

}  // namespace spsim::sim
