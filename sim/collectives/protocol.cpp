// NCCL protocol constants and the rules that turn them into one call's costs.
#include "sim/collectives/protocol.hpp"

#include <algorithm>

namespace spsim::sim {

ProtocolTable nccl_protocol_table() {
  ProtocolTable t;
  auto us = [](double v) { return Time::from_us(v); };
  auto& ll = t.protocols[static_cast<std::size_t>(Protocol::ll)];
  auto& ll128 = t.protocols[static_cast<std::size_t>(Protocol::ll128)];
  auto& simple = t.protocols[static_cast<std::size_t>(Protocol::simple)];
  ll = {us(6.6), us(6.8), {us(0.6), us(1.0), us(2.7)}};
  ll128 = {us(14.0), us(14.0), {us(1.9), us(2.5), us(4.0)}};
  simple = {us(8.4), us(0.0), {us(3.4), us(5.7), us(14.0)}};
  t.nvls_latency = {us(23.0), us(18.0)};
  t.source = "NCCL 2.20 src/graph/tuning.cc";
  return t;
}

bool protocol_supported(AlgorithmFamily family, Protocol p) {
  return (family != AlgorithmFamily::nvls && family != AlgorithmFamily::pat && family != AlgorithmFamily::collnet) ||
         p == Protocol::simple;
}

ProtocolCosts resolve_protocol(const ProtocolTable& table, Protocol p, AlgorithmFamily family, CommKind kind,
                               bool multi_node, int min_gpus_per_node, int nodes, double busbw_bound_Bps) {
  const auto& e = table.protocols[static_cast<std::size_t>(p)];
  ProtocolCosts c;
  c.step_latency = e.step_latency;
  if (family == AlgorithmFamily::nvls) {
    // One in-switch step; its latency is the NVLS constant of the fabric it crosses.
    c.base_latency = Time{};
    c.step_latency = {table.nvls_latency[0], table.nvls_latency[0], table.nvls_latency[1]};
    c.efficiency = table.nvls_efficiency;
    c.network_efficiency = table.tree_efficiency;  // NVLS-Tree's tree between nodes
    if (!multi_node && table.nvls_pipeline.active()) {
      // One node: the channel pipeline bounds the kernel; the port carries its bytes at the link's rate.
      c.nvls_pipeline = table.nvls_pipeline;
      c.efficiency = 1.0;
    }
    return c;
  }
  if (family == AlgorithmFamily::collnet) {
    c.base_latency = Time{};
    c.step_latency = {table.collnet_intra_latency, table.collnet_intra_latency, table.collnet_net_latency};
    c.efficiency = c.network_efficiency = table.collnet_efficiency;
    c.peer_latency = table.collnet_arity_latency;
    return c;
  }
  if (family == AlgorithmFamily::pat) {
    c.base_latency = table.pat_base_latency + nodes * table.pat_rank_latency;
    c.step_latency = {table.pat_step_latency, table.pat_step_latency, table.pat_step_latency};
    c.efficiency = c.network_efficiency = table.pat_efficiency;
    return c;
  }
  c.base_latency = family == AlgorithmFamily::tree ? e.tree_base_latency : e.ring_base_latency;
  const bool ring_collective =
      family == AlgorithmFamily::ring &&
      (kind == CommKind::all_reduce || kind == CommKind::all_gather || kind == CommKind::reduce_scatter);
  if (p == Protocol::ll && ring_collective) {
    c.efficiency = table.ll_efficiency_ring;
    const double cap = table.ll_max_busbw_Bps[static_cast<std::size_t>(std::clamp(nodes, 1, 3) - 1)];
    if (cap > 0 && busbw_bound_Bps > 0) c.efficiency = std::min(c.efficiency, cap / busbw_bound_Bps);
  } else if (p == Protocol::ll) {
    c.efficiency = (multi_node || kind == CommKind::all_reduce) ? table.ll_efficiency_allreduce_or_multinode
                                                                : table.ll_efficiency_other;
  } else if (p == Protocol::ll128)
    c.efficiency = min_gpus_per_node < 2 ? table.ll128_efficiency_one_gpu_per_node : table.ll128_efficiency;
  if (family == AlgorithmFamily::tree) c.efficiency *= table.tree_efficiency;
  c.network_efficiency = c.efficiency;
  return c;
}

}  // namespace spsim::sim
