// NCCL protocol cost model (Simple / LL / LL128): per-collective base latency, per-step latency by
// link class, and the fraction of link bandwidth the payload gets.
//
// Constants are NCCL 2.20's tuning model (src/graph/tuning.cc), as summarised in
// shared/data/hardware-and-measurements.md:
//   base latency (µs; LL / LL128 / Simple): ring 6.6 / 14.0 / 8.4, tree 6.8 / 14.0 / 0
//   per-step latency (µs):  NVLink .6 / 1.9 / 3.4,  PCIe 1.0 / 2.5 / 5.7,  network 2.7 / 4.0 / 14.0
//   NVLS latency 23 µs over NVLink (18 µs over the network), Simple only
//   bandwidth efficiency: ring LL ×1/4 (multi-node or all-reduce) else ×1/3; LL128 ×0.92 (×0.7 with
//   fewer than 2 GPUs per node); tree ×0.92; NVLS ×5/6 (NCCL 2.20's NVLS algBw ratio; the H100/H200/
//   H800 and B200/GB200 presets set NCCL 2.2x's per-generation nvlsEfficiency, 0.85 and 0.74).
// NCCL publishes no separate per-step tree latency in that summary: trees use the ring per-step
// values here. A cluster preset may override any constant under "tuning" (calibration;
// analysis/config/cluster.hpp).
//
// A simulated step then costs  step_latency[class of the route] + route latency
//                              + bytes / (efficiency × max-min fair rate).
#pragma once

#include <array>
#include <string>

#include "sim/cluster/hardware.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

// Which of NCCL's latency/efficiency rules an algorithm follows. Point-to-point algorithms
// (pairwise, direct) follow the ring rules.
// nvls: NVLS and NVLS-Tree; collnet: CollNet Direct (in-network reduction, SHARP).
enum class AlgorithmFamily : std::uint8_t { ring, tree, nvls, pat, collnet };

// The costs of one protocol for one call, after NCCL's rules are applied.
struct ProtocolCosts {
  Time base_latency{};                            // once per collective
  std::array<Time, kLinkClasses> step_latency{};  // per step, by the class of the step's route
  double efficiency = 1;                          // payload fraction of the fair-share bandwidth
  // NVLS-Tree's inter-node tree runs NCCL's tree efficiency on the network while its in-switch
  // phases run NVLS's; every other algorithm has one efficiency (network_efficiency = efficiency).
  double network_efficiency = 1;
  Time peer_latency{};  // CollNet Direct: per local peer of a GPU (NCCL's arity serialization)
  // NVLS on one node with the channel pipeline model (ProtocolTable::NvlsPipeline; active when the
  // preset gives it): the NVLink port then carries its bytes at the link's payload rate (efficiency 1)
  // and the kernel's channels set a second bound (sim/collectives/nvls.cpp).
  struct NvlsPipeline {
    int channels = 0;            // NCCL's NVLS channels (CTAs) per GPU
    double max_chunk_bytes = 0;  // NCCL_NVLS_CHUNKSIZE
    Time peer_sync{};            // fixed cost of one (peer, chunk) step of a channel
    double channel_Bps = 0;      // one channel's streaming rate
    [[nodiscard]] bool active() const { return channels > 0 && channel_Bps > 0 && max_chunk_bytes > 0; }
  } nvls_pipeline;
  [[nodiscard]] Time step(LinkClass c) const { return step_latency[static_cast<std::size_t>(c)]; }
  [[nodiscard]] double efficiency_on(LinkClass c) const {
    return c == LinkClass::network ? network_efficiency : efficiency;
  }
};

struct ProtocolTable {
  struct Entry {
    Time ring_base_latency{};
    Time tree_base_latency{};
    std::array<Time, kLinkClasses> step_latency{};  // by LinkClass
  };
  std::array<Entry, kProtocols> protocols{};  // by Protocol
  std::array<Time, 2> nvls_latency{};         // [0] NVLink, [1] network
  double nvls_efficiency = 5.0 / 6.0;
  // One-node NVLS as NCCL's kernel runs it (sim/collectives/nvls.cpp): channels, the largest chunk,
  // and the two fitted constants of a channel's pipeline; left unset (no tuning.nvls.channels) it keeps
  // the efficiency model. When set, tuning.nvls.efficiency applies only across nodes (NVLS-Tree, SHARP).
  ProtocolCosts::NvlsPipeline nvls_pipeline{};
  double tree_efficiency = 0.92;
  double ll128_efficiency = 0.92;
  double ll128_efficiency_one_gpu_per_node = 0.7;
  double ll_efficiency_allreduce_or_multinode = 0.25;  // NCCL 2.20's ring LL; still trees' and p2p's
  double ll_efficiency_other = 1.0 / 3.0;
  // Ring collectives (all-reduce, all-gather, reduce-scatter) on LL: NCCL 2.28 (src/graph/tuning.cc)
  // charges half the bandwidth (each 8-byte store carries 4 bytes of data and a 4-byte flag) and caps the
  // bus bandwidth at llMaxBw, per GPU generation and node count (1, 2, more): Ampere 87.7 / 22.5 / 19,
  // Hopper 141 / 45 / 35, Blackwell twice Hopper's. The cap (bytes/s; 0: none) comes from the preset.
  double ll_efficiency_ring = 0.5;
  std::array<double, 3> ll_max_busbw_Bps{};
  // PAT (NCCL 2.23+, src/graph/tuning.cc): base latency 8 µs, a linear 2.8 µs per rank, per log step
  // the network's PAT latency (14 µs) / 3.5, and 0.75 of the ring's bus bandwidth. Simple only.
  Time pat_base_latency = Time::from_us(8.0);
  Time pat_rank_latency = Time::ps(2800000);
  Time pat_step_latency = Time::ps(4000000);  // 14 µs / 3.5
  double pat_efficiency = 0.75;
  // CollNet Direct (NCCL 2.12+, with the SHARP plugin; src/graph/tuning.cc): no base latency, hardware
  // latencies (Simple) 3.7 µs on NVLink and 31 µs on the network, 0.4 µs per local peer ("arity
  // serialization"), and its bus bandwidth × 0.85 on compute capability 9.0 and later (the presets of
  // Hopper and Blackwell GPUs set collnet_efficiency). Simple only.
  Time collnet_intra_latency = Time::ps(3700000);
  Time collnet_net_latency = Time::from_us(31.0);
  Time collnet_arity_latency = Time::ps(400000);
  double collnet_efficiency = 1.0;
  // Channels NCCL builds on one GPU for its collectives inside the node (its log's "N coll channels"):
  // each runs as one CTA of the communication kernel, which holds that SM for the kernel's whole run
  // (its threads and registers leave no room beside a GEMM's or an attention kernel's CTA). 0: not
  // known for this cluster. The replay's default compute slowdown follows from it
  // (analysis/config: compute kernels keep SMs − channels of the SMs during communication).
  int channels = 0;
  std::string channels_source;  // where the count comes from (an NCCL log of this system)
  std::string source;           // where overrides came from (calibration note)
};

// NCCL 2.20's constants (above).
[[nodiscard]] ProtocolTable nccl_protocol_table();

// NVLS and PAT run only the Simple protocol; every other family runs all three.
[[nodiscard]] bool protocol_supported(AlgorithmFamily family, Protocol p);

// Resolves the table for one call (PAT: `nodes` is its rank count, one per node). `multi_node`: the group spans more than one node;
// `min_gpus_per_node`: the fewest group members on any node it spans. For ring collectives on LL,
// `nodes` picks the llMaxBw bucket and `busbw_bound_Bps` (the group's bus-bandwidth bound: a GPU's
// NVLink port, or across nodes the lesser of it and its node's NICs) turns the cap into an efficiency;
// 0 leaves LL uncapped.
[[nodiscard]] ProtocolCosts resolve_protocol(const ProtocolTable& table, Protocol p, AlgorithmFamily family,
                                             CommKind kind, bool multi_node, int min_gpus_per_node,
                                             int nodes = 1, double busbw_bound_Bps = 0);

}  // namespace spsim::sim
