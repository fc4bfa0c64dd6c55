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

// How the NICs of a multi-node cluster are switched (JSON `inter_node.fabric`):
//   single_switch   every NIC on one non-blocking switch (the default; a fat tree with full bisection)
//   fat_tree        nodes in leaf groups of `nodes_per_leaf`: the NICs of a group share a leaf switch,
//                   leaves meet at a spine through uplinks of (NIC ports of a full leaf) × NIC bandwidth
//                   / `oversubscription`
//   rail_optimized  nodes in groups of `nodes_per_leaf` (a scalable unit), one leaf per rail: NIC c of
//                   every node of the group on the group's leaf c (DGX SuperPOD's layout). Each leaf's
//                   uplinks are its `nodes_per_leaf` NIC ports × NIC bandwidth / `oversubscription`;
//                   they meet at one spine. With `pxn` (NCCL's PXN, on by default since NCCL 2.12) a
//                   message to a GPU of another node on another rail first crosses NVLink to the GPU
//                   of its own node on the destination's rail and leaves through that GPU's NIC, so it
//                   stays on one rail leaf within a group; without (or on PCIe nodes), it crosses the
//                   spine. The estimates (tuner, closed forms) see the spine between groups only.
// A leaf's uplinks are one link of their summed bandwidth: traffic spreads over them perfectly (ECMP
// collisions would lower it further). The uplinks are cables and switch hops like the NICs', so they
// have the inter-node link's efficiency and per-hop latency.
enum class FabricKind : std::uint8_t { single_switch, fat_tree, rail_optimized };
[[nodiscard]] const char* fabric_kind_name(FabricKind k);
struct FabricConfig;
// "fat_tree, 4 nodes per leaf, 2:1 oversubscribed" ("" for the single switch), for headers.
[[nodiscard]] std::string describe_fabric(const FabricConfig& f);

struct FabricConfig {
  FabricKind kind = FabricKind::single_switch;
  int nodes_per_leaf = 0;       // fat_tree: nodes per leaf switch (≥ 1)
  double oversubscription = 1;  // downlink / uplink bandwidth of a leaf, ≥ 1
  // The switch reduces in the network (InfiniBand SHARP): NCCL's CollNet all-reduce sends each GPU's
  // node-reduced slice up once and receives the reduced slice back (sim/collectives/collnet.cpp).
  // single_switch only.
  bool sharp = false;
  // rail_optimized: cross-rail messages go through the peer GPU on the destination's rail (PXN).
  bool pxn = true;
  // Leaf groups (pods) holding `nodes` nodes: 1 for a single switch.
  [[nodiscard]] int groups(int nodes) const {
    return kind == FabricKind::single_switch ? 1 : (nodes + nodes_per_leaf - 1) / nodes_per_leaf;
  }
  // Rotating the nodes by one maps the network onto itself, traffic included (CollectiveRun::
  // can_fold_nodes): one leaf group, and on a rail-optimized fabric PXN, without which the cross-rail
  // hops of every node of the group share the rail leaves' uplinks to the spine.
  [[nodiscard]] bool node_symmetric(int nodes) const {
    return groups(nodes) <= 1 && (kind != FabricKind::rail_optimized || pxn);
  }
  // The leaf group node `node` belongs to.
  [[nodiscard]] int leaf_of(int node) const {
    return kind == FabricKind::single_switch ? 0 : node / nodes_per_leaf;
  }
};

// Multi-node: one NIC per GPU, switched as `fabric` says.
struct InterNodeConfig {
  LinkSpec link;        // NIC <-> its leaf (or the one fabric switch)
  LinkSpec nic_attach;  // GPU <-> its NIC (PCIe)
  FabricConfig fabric;
};

struct ClusterConfig;
// Line rate of one leaf group's uplinks together, one direction (fat_tree, rail_optimized): the NIC
// ports of a full group at the inter-node link's line rate, over the oversubscription (a fat tree's one
// leaf, a rail-optimized group's gpus_per_node rail leaves). Effective rate: × inter_node.link.efficiency.
[[nodiscard]] double leaf_uplink_line_Bps(const ClusterConfig& c);

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
