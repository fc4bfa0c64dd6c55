// default_algorithms(): the registry of built-in algorithms, and the shared hop cost.
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
  return reg;
}

double hop_s(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes,
             double parts) {
  const Time latency = inter_node ? shape.inter_latency : shape.intra_latency;
  const double bw = inter_node ? shape.inter_Bps : shape.intra_Bps;
  const LinkClass cls = inter_node ? shape.inter_class : shape.intra_class;
  return (costs.step(cls) + latency).seconds() + bytes / (parts * costs.efficiency * bw);
}

Time hop_time(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes_per_link) {
  const Time latency = inter_node ? shape.inter_latency : shape.intra_latency;
  const double bw = inter_node ? shape.inter_Bps : shape.intra_Bps;
  const LinkClass cls = inter_node ? shape.inter_class : shape.intra_class;
  return costs.step(cls) + latency + Time::from_seconds(bytes_per_link / (costs.efficiency * bw));
}

}  // namespace spsim::sim
