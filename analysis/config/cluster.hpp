// The `cluster` section of a config (DESIGN.md §7) parsed into the simulator's ClusterConfig, and the
// cluster presets of configs/clusters/.
//
// A section is {"preset": NAME, "nodes": N, ...overrides}, or {"gpu", "gpus_per_node", "nodes",
// "intra_node", "inter_node"}, or {"gpu", "topology": {...}}. "gpu" is a name from
// configs/hardware/gpus/ or an inline object of the same keys; "tuning" overrides NCCL's protocol
// constants (sim/collectives/protocol.hpp: "simple" | "ll" | "ll128" → base_latency_us,
// tree_base_latency_us, nvlink/pcie/network_step_latency_us, and for "ll" max_busbw_GBps; "nvls" →
// nvlink_latency_us, network_latency_us, efficiency, and one-node NVLS's channel pipeline channels, peer_sync_us,
// channel_GBps, max_chunk_KiB (sim/collectives/nvls.cpp); "tree" → efficiency; "source"); "collective_fits" holds
// measured per-collective latency and bus bandwidth (sim/collectives/fitted.hpp). Keys given next to a preset
// override the preset's (objects merge key by key); "gpus_per_node" next to a preset may only lower it (a
// partial node). "inter_node" may hold "fabric": {"kind": single_switch | fat_tree, "nodes_per_leaf",
// "oversubscription"} (sim/cluster/config.hpp). Link objects take "link" (a name from
// configs/hardware/links/) plus optional bandwidth_GBps / efficiency / latency_us overrides. Errors are InputErrors naming the JSON path: unknown preset/GPU/link
// (listing the choices), nodes < 1, negative bandwidth, unknown key, a topology whose GPUs cannot all reach
// each other.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cluster/config.hpp"

namespace spsim::analysis {

// Names of the presets in configs/clusters/.
[[nodiscard]] std::vector<std::string> cluster_presets();

// The cluster {"preset": preset, "nodes": nodes} (InputError at "cluster.preset" for an unknown name).
[[nodiscard]] sim::ClusterConfig preset_cluster(const std::string& preset, int nodes = 1);
// The same with the preset's own node count when `nodes` is nullopt and, when given, `gpus_per_node`
// GPUs of each node (at most the preset's: a partial node); errors name `path_prefix` + the key
// ("preset", "nodes", "gpus_per_node", ...).
[[nodiscard]] sim::ClusterConfig preset_cluster(const std::string& preset, std::optional<int> nodes,
                                                const std::string& path_prefix,
                                                std::optional<int> gpus_per_node = std::nullopt);

// The inter-node fabric from command-line options (`spsim collective --fabric KIND --nodes-per-leaf N
// --oversubscription R --sharp --no-pxn`), validated as inter_node.fabric is; errors name the option.
[[nodiscard]] sim::FabricConfig fabric_from_options(const std::string& kind, std::optional<int> nodes_per_leaf,
                                                    std::optional<double> oversubscription, bool sharp = false,
                                                    bool no_pxn = false);

// A cluster section given as JSON text (a file's contents); errors name `where` + the JSON path.
[[nodiscard]] sim::ClusterConfig parse_cluster_text(const std::string& json_text, const std::string& where);

}  // namespace spsim::analysis
