// The algorithms shipped in sim/collectives/, one AlgorithmInfo factory per file.
#pragma once

#include "sim/collectives/algorithm.hpp"

namespace spsim::sim {

[[nodiscard]] AlgorithmInfo ring_algorithm();              // ring.cpp
[[nodiscard]] AlgorithmInfo tree_algorithm();              // tree.cpp
[[nodiscard]] AlgorithmInfo nvls_algorithm();              // nvls.cpp
[[nodiscard]] AlgorithmInfo nvls_tree_algorithm();         // nvls_tree.cpp
[[nodiscard]] AlgorithmInfo halving_doubling_algorithm();  // halving_doubling.cpp
[[nodiscard]] AlgorithmInfo pairwise_algorithm();          // pairwise.cpp
[[nodiscard]] AlgorithmInfo direct_algorithm();            // direct.cpp
[[nodiscard]] AlgorithmInfo hierarchical_algorithm();      // hierarchical.cpp

// One step whose flows cross an intra-node or inter-node hop, as the tuner and the closed forms see it:
//   α + bytes / (parts · efficiency · bandwidth),   α = protocol step latency + route latency,
// in seconds; `bytes` / `parts` share the bottleneck (a ring's n over P·C channels: bytes n, parts P·C).
[[nodiscard]] double hop_s(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes,
                           double parts = 1);
// The same formula summed in picoseconds (α exact, the transfer term rounded), for the estimates that
// add Time values (tree, NVLS, halving-doubling, hierarchical).
[[nodiscard]] Time hop_time(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node,
                            double bytes_per_link);

}  // namespace spsim::sim
