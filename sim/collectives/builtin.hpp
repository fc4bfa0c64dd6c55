// The algorithms shipped in sim/collectives/, one AlgorithmInfo factory per file.
#pragma once

#include "sim/collectives/algorithm.hpp"

namespace spsim::sim {

[[nodiscard]] AlgorithmInfo ring_algorithm();              // ring.cpp
[[nodiscard]] AlgorithmInfo tree_algorithm();              // tree.cpp
[[nodiscard]] AlgorithmInfo nvls_algorithm();              // nvls.cpp
[[nodiscard]] AlgorithmInfo halving_doubling_algorithm();  // halving_doubling.cpp
[[nodiscard]] AlgorithmInfo pairwise_algorithm();          // pairwise.cpp
[[nodiscard]] AlgorithmInfo direct_algorithm();            // direct.cpp
[[nodiscard]] AlgorithmInfo hierarchical_algorithm();      // hierarchical.cpp

// α and β of one step whose flows cross an intra-node or inter-node hop, as the tuner sees them:
// α = protocol step latency + route latency; `bytes_per_link` = bytes sharing the bottleneck.
[[nodiscard]] Time hop_time(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node,
                            double bytes_per_link);

}  // namespace spsim::sim
