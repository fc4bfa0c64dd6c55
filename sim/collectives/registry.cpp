// default_algorithms(): the registry of built-in algorithms, and the shared hop cost.
#include <algorithm>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

AlgorithmRegistry default_algorithms() {
  AlgorithmRegistry reg;
  reg.add(ring_algorithm());
  reg.add(tree_algorithm());
  reg.add(nvls_algorithm());
  reg.add(nvls_tree_algorithm());
  reg.add(halving_doubling_algorithm());
  reg.add(pairwise_algorithm());
  reg.add(direct_algorithm());
  reg.add(hierarchical_algorithm());
  reg.add(pat_algorithm());
  reg.add(collnet_direct_algorithm());
  return reg;
}

namespace {
int btree_parent(int r, int n) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < n ? up : r ^ bit;
}
}  // namespace

int node_tree_parent(int node, int nodes, int tree) {
  if (tree == 0) return btree_parent(node, nodes);
  const bool mirror = nodes % 2 == 0;
  const int pos = mirror ? nodes - 1 - node : (node + nodes - 1) % nodes;
  const int up = btree_parent(pos, nodes);
  if (up < 0) return -1;
  return mirror ? nodes - 1 - up : (up + 1) % nodes;
}

int node_tree_depth(int nodes) {
  int deepest = 0;
  for (int t : {0, 1})
    for (int v = 0; v < nodes; ++v) {
      int d = 0;
      for (int u = v; (u = node_tree_parent(u, nodes, t)) >= 0;) ++d;
      deepest = std::max(deepest, d);
    }
  return deepest;
}

std::string slice_nodes_refusal(const GroupShape& g, bool nvls) {
  if (nvls && g.node_nvls_switches.empty())
    return "not every node of the group has an NVSwitch with NVLS (H100/H200/B200 presets have one)";
  if (g.min_per_node != g.max_per_node)
    return "the nodes hold different numbers of the group's GPUs (" + std::to_string(g.min_per_node) + " to " +
           std::to_string(g.max_per_node) + "); slices need the same count on every node";
  return "";
}

double hop_s(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes,
             double parts) {
  const Time latency = inter_node ? shape.inter_latency : shape.intra_latency;
  const double bw = inter_node ? shape.inter_Bps : shape.intra_Bps;
  const LinkClass cls = inter_node ? shape.inter_class : shape.intra_class;
  return (costs.step(cls) + latency).seconds() + bytes / (parts * costs.efficiency_on(cls) * bw);
}

double spine_s(const GroupShape& shape, const ProtocolCosts& costs, double bytes) {
  if (shape.spine_Bps <= 0) return 0;
  return (costs.step(shape.inter_class) + shape.inter_latency).seconds() +
         bytes / (costs.efficiency_on(shape.inter_class) * shape.spine_Bps);
}

Time sharp_hop_time(const GroupShape& shape, const ProtocolCosts& costs, double bytes) {
  return costs.step(shape.inter_class) + shape.sharp_hop_latency +
         Time::from_seconds(bytes / (costs.efficiency_on(shape.inter_class) * shape.inter_Bps));
}

Time hop_time(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes_per_link) {
  const Time latency = inter_node ? shape.inter_latency : shape.intra_latency;
  const double bw = inter_node ? shape.inter_Bps : shape.intra_Bps;
  const LinkClass cls = inter_node ? shape.inter_class : shape.intra_class;
  return costs.step(cls) + latency + Time::from_seconds(bytes_per_link / (costs.efficiency_on(cls) * bw));
}

}  // namespace spsim::sim
