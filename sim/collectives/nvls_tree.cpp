// NVLS-Tree: all-reduce across nodes whose GPUs sit on an NVLS switch (NCCL's NVLS_TREE, 2.18+).
//
// Node-local index s of G GPUs owns slice s (n / G bytes). (1) The switch reduces: every GPU pushes its
// whole buffer into the switch and receives its reduced slice (n up, n/G down per port). (2) Slice s is
// all-reduced across nodes by the GPUs of index s (one rail, one NIC each) on a double binary tree over
// the nodes (NCCL's: an in-order binary tree and its mirror or shift, builtin.hpp), each tree carrying
// half of the slice up (reduce) and down (broadcast). (3) Each GPU multicasts its reduced slice
// through the switch (n/G up, n down). Per port and direction that is n (G + 1) / G, as single-node
// NVLS; per NIC and direction, n / 2G for each tree edge it ends. Beyond three nodes some node is
// interior in one tree with two children and a leaf in the other, so its NIC carries 2n/G a direction
// (NCCL's tuner halves NVLS-Tree's network bandwidth past two nodes for the same reason).
//
// NCCL pipelines the three phases in chunks, so they stream concurrently: modelled as a fluid, every
// port and tree-edge transfer starts at once, and after the last arrives the pipeline's remaining
// latency is paid: the second in-switch phase and the rest of the last chunk's 2 × depth tree hops:
//   T = max(α_nvls + n(G+1)/G / (e_nvls B_port), max over NICs (α_net + load / (e_tree B_nic)))
//       + α_nvls + (2·depth − 1) α_net
// with α_nvls = NVLS latency + GPU→switch route latency, α_net = network step latency of NVLS over the
// network + route latency, e_nvls NCCL's NVLS efficiency and e_tree its tree efficiency. The tuner
// and the simulation use that same expression (tests/sim/collectives_closed_form_test.cpp).
// α_nvls is paid twice (reduce, then multicast); the presets' NVLS latency was fitted on a whole
// single-node NVLS call at 16 MB, so NVLS-Tree at mid sizes is not validated (no multi-node mid-size row).
#include <algorithm>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

// Tree edges (child node, parent node) of both trees.
std::vector<std::pair<int, int>> tree_edges(int nodes) {
  std::vector<std::pair<int, int>> edges;
  for (int t : {0, 1})
    for (int v = 0; v < nodes; ++v)
      if (const int p = node_tree_parent(v, nodes, t); p >= 0) edges.emplace_back(v, p);
  return edges;
}

// Largest number of tree-edge transfers one NIC carries in one direction (both trees).
int max_nic_transfers(int nodes) {
  std::vector<int> out(static_cast<std::size_t>(nodes), 0), in(static_cast<std::size_t>(nodes), 0);
  for (auto [child, parent] : tree_edges(nodes)) {  // up child→parent and down parent→child
    ++out[static_cast<std::size_t>(child)], ++in[static_cast<std::size_t>(parent)];
    ++out[static_cast<std::size_t>(parent)], ++in[static_cast<std::size_t>(child)];
  }
  return std::max(*std::ranges::max_element(out), *std::ranges::max_element(in));
}

// The latency left after the streams: the multicast phase and the rest of the last chunk's tree hops.
Time tail_latency(const GroupShape& g, const ProtocolCosts& costs) {
  const Time a_net = costs.step(g.inter_class) + g.inter_latency;
  return costs.step(LinkClass::nvlink) + g.nvls_hop_latency + (2 * node_tree_depth(g.nodes()) - 1) * a_net;
}

class NvlsTree final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::nvls; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape& g) const override {
    if (!g.multi_node())
      return "NVLS-Tree joins the NVLS switches of several nodes; the group spans one (use nvls)";
    if (g.max_per_node < 2) return "one GPU per node has nothing to reduce in the switch (use tree or ring)";
    return slice_nodes_refusal(g, true);
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    const GroupShape& g = run->shape();
    const int nodes = g.nodes(), per = g.max_per_node;
    const double port_bytes = run->bytes() * (per + 1) / per, edge_bytes = run->bytes() / (2.0 * per);
    const auto edges = tree_edges(nodes);
    auto left = std::make_shared<std::size_t>(2 * static_cast<std::size_t>(run->size()) +
                                              2 * edges.size() * static_cast<std::size_t>(per));
    const Time tail = tail_latency(g, run->costs());
    auto arrived = [run, left, tail] {
      if (--*left == 0) run->after(tail, [run] { run->finish(); });
    };
    for (int v = 0; v < nodes; ++v)
      for (int r : g.node_members[static_cast<std::size_t>(v)])
        for (bool up : {true, false})
          run->transfer_device(r, g.node_nvls_switches[static_cast<std::size_t>(v)], up, port_bytes, arrived);
    for (int s = 0; s < per; ++s)
      for (auto [child, parent] : edges) {
        const int c = g.node_members[static_cast<std::size_t>(child)][static_cast<std::size_t>(s)];
        const int p = g.node_members[static_cast<std::size_t>(parent)][static_cast<std::size_t>(s)];
        run->transfer(c, p, edge_bytes, arrived);
        run->transfer(p, c, edge_bytes, arrived);
      }
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    const int per = g.max_per_node;
    const Time port = costs.step(LinkClass::nvlink) + g.nvls_hop_latency +
                      Time::from_seconds(call.bytes * (per + 1) / per / (costs.efficiency * g.intra_Bps));
    const Time nic = hop_time(g, costs, true, max_nic_transfers(g.nodes()) * call.bytes / (2.0 * per));
    return (std::max(port, nic) + tail_latency(g, costs)).seconds();
  }
};

}  // namespace

AlgorithmInfo nvls_tree_algorithm() {
  return {"nvls_tree",
          "all-reduce across nodes: in-switch reduce and multicast (NVLS) in each node, a double binary tree "
          "per rail between nodes, pipelined; Simple protocol",
          {CommKind::all_reduce},
          [](const GroupShape& g) {
            return g.multi_node() && g.max_per_node > 1 && !g.node_nvls_switches.empty();
          },
          [] { return std::make_unique<NvlsTree>(); },
          {}};
}

}  // namespace spsim::sim
