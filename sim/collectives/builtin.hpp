// The algorithms shipped in sim/collectives/, one AlgorithmInfo factory per file.
#pragma once

#include "sim/collectives/algorithm.hpp"

namespace spsim::sim {

[[nodiscard]] AlgorithmInfo ring_algorithm();              // ring.cpp
[[nodiscard]] AlgorithmInfo tree_algorithm();              // tree.cpp
[[nodiscard]] AlgorithmInfo nvls_algorithm();              // nvls.cpp
// NCCL's chunk (bytes) for one-node NVLS: an all-reduce of `bytes` over `channels` × `heads` concurrent
// chunks of at most `max_chunk_bytes` (src/enqueue.cc; nvls.cpp's header).
[[nodiscard]] double nvls_chunk_bytes(double bytes, int channels, int heads, double max_chunk_bytes);
[[nodiscard]] AlgorithmInfo nvls_tree_algorithm();         // nvls_tree.cpp
[[nodiscard]] AlgorithmInfo halving_doubling_algorithm();  // halving_doubling.cpp
[[nodiscard]] AlgorithmInfo pairwise_algorithm();          // pairwise.cpp
[[nodiscard]] AlgorithmInfo direct_algorithm();            // direct.cpp
[[nodiscard]] AlgorithmInfo hierarchical_algorithm();      // hierarchical.cpp
[[nodiscard]] AlgorithmInfo pat_algorithm();               // pat.cpp
[[nodiscard]] AlgorithmInfo collnet_direct_algorithm();    // collnet.cpp

// NCCL's double binary tree over `nodes` nodes (tree 0 or 1), shared by tree and NVLS-Tree. Tree 0 is
// an in-order binary tree over positions: the parent of position r > 0 is r with its lowest set bit b
// moved up one place, (r ^ b) | 2b, or r ^ b when that is not below n; position 0 is the root (n = 4:
// 0 -> 2 -> {1, 3}). Tree 1 mirrors the positions (node v at n − 1 − v) when n is even and shifts them
// by one (v at v − 1) when n is odd, so a node interior in one tree is a leaf or the root in the other
// (NCCL's trees.cc builds the same shapes; Sanders, Speck & Träff, Parallel Computing 2009).
[[nodiscard]] int node_tree_parent(int node, int nodes, int tree);  // -1 for the root
// Hops from the deepest node to the root, over both trees (0 for one node).
[[nodiscard]] int node_tree_depth(int nodes);

// Why an algorithm that gives local GPU s slice s of every node cannot run on a multi-node group, or "":
// the nodes hold different numbers of its GPUs, or (`nvls`) some node lacks an NVLS switch.
[[nodiscard]] std::string slice_nodes_refusal(const GroupShape& shape, bool nvls);

// One step whose flows cross an intra-node or inter-node hop, as the tuner and the closed forms see it:
//   α + bytes / (parts · efficiency · bandwidth),   α = protocol step latency + route latency,
// in seconds; `bytes` / `parts` share the bottleneck (a ring's n over P·C channels: bytes n, parts P·C).
[[nodiscard]] double hop_s(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node, double bytes,
                           double parts = 1);
// A step that moves `bytes` up one leaf's uplinks of a fat tree (GroupShape::spine_Bps), as the
// estimates see it: α of an inter-node hop + bytes / (efficiency · uplink rate); 0 when the group is under
// one switch. The flow model shares the uplinks max-min among the flows that cross them.
[[nodiscard]] double spine_s(const GroupShape& shape, const ProtocolCosts& costs, double bytes);
// The same formula summed in picoseconds (α exact, the transfer term rounded), for the estimates that
// add Time values (tree, NVLS, halving-doubling, hierarchical).
[[nodiscard]] Time hop_time(const GroupShape& shape, const ProtocolCosts& costs, bool inter_node,
                            double bytes_per_link);
// A stream of `bytes` between a GPU and the network switch that reduces (GroupShape::sharp_switch), one
// direction: the protocol's step latency + the route latency + bytes / (efficiency · NIC bandwidth).
[[nodiscard]] Time sharp_hop_time(const GroupShape& shape, const ProtocolCosts& costs, double bytes);

}  // namespace spsim::sim
