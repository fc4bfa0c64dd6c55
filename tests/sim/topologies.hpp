// Small explicit clusters for the simulator tests.
#pragma once

#include <string>

#include "analysis/config/cluster.hpp"
#include "analysis/config/hardware.hpp"
#include "sim/cluster/config.hpp"

namespace spsim::sim::testing {

using spsim::analysis::preset_cluster;

// P GPUs ("g0".."g{P-1}") each with a duplex link of `bytes_per_s` and `hop_latency` to one switch:
// a full-bisection (non-blocking) switch, every GPU pair two hops apart.
inline ClusterConfig star_cluster(int p, double bytes_per_s, Time hop_latency,
                                  DeviceKind switch_kind = DeviceKind::network_switch, bool nvls = false) {
  ClusterConfig c;
  c.name = "star";
  c.gpu = spsim::analysis::load_gpu("h100-sxm5-80gb", "test");
  ExplicitTopology t;
  for (int i = 0; i < p; ++i) t.devices.push_back({"g" + std::to_string(i), DeviceKind::gpu, 0, false});
  t.devices.push_back({"sw", switch_kind, 0, nvls});
  for (int i = 0; i < p; ++i) {
    LinkSpec s;
    s.name = "test";
    s.bandwidth_Bps = bytes_per_s;
    s.latency = hop_latency;
    s.link_class = switch_kind == DeviceKind::nvswitch ? LinkClass::nvlink : LinkClass::network;
    t.links.push_back({"g" + std::to_string(i), "sw", s, true});
  }
  c.topology = t;
  return c;
}

// The same with every GPU a node of its own (one GPU per node, as PAT wants): node i holds "g{i}".
inline ClusterConfig one_gpu_nodes(int p, double bytes_per_s, Time hop_latency) {
  ClusterConfig c = star_cluster(p, bytes_per_s, hop_latency);
  auto& t = *c.topology;
  for (int i = 0; i < p; ++i) t.devices[static_cast<std::size_t>(i)].node = i;
  return c;
}

// A protocol table with no base latency and the given per-step latency for every link class and
// efficiency 1 for Simple: the closed forms' α then is step + route latency.
inline ProtocolTable plain_protocols(Time step) {
  ProtocolTable t = nccl_protocol_table();
  for (auto& e : t.protocols) {
    e.ring_base_latency = Time{};
    e.tree_base_latency = Time{};
    e.step_latency = {step, step, step};
  }
  t.nvls_latency = {step, step};
  return t;
}

}  // namespace spsim::sim::testing
