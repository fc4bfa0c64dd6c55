// Double binary tree all-reduce (NCCL's "tree"), node-aware, as a fluid pipeline.
//
// Two trees each reduce and then broadcast half of the buffer. Across nodes the two trees are NCCL's
// double binary tree over the nodes (node_tree_parent, builtin.hpp: an in-order binary tree and its
// mirror or shift), so a node interior in one tree is a leaf or the root in the other (Sanders, Speck
// & Träff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing
// 2009). Inside a node the ranks form a chain hanging off the node's head rank,
// as NCCL's trees do; tree 1's head is the middle member, so the two trees leave a node through
// different NICs. Across nodes, C = ranks-per-node channels each run such a pair on n / C, with
// heads rotated by the channel index, so every NIC carries trees (NCCL's channels, one per rail).
//
// NCCL pipelines each tree in chunks far smaller than the message; simulating every chunk would
// cost millions of flows, so the pipeline is modelled as a fluid: (1) every tree edge streams all
// but the last chunk (up and down at once, sharing links max-min fairly), then (2) the last chunk
// (512 KiB, or all of a smaller message) is reduced up and broadcast down chunk by chunk, which
// carries the latency structure exactly (2 × depth hops). T ≈ stream + 2 Σ_hops (α + chunk β).
// Tuner estimate: the same, with the stream taken as 2nβ on the busier of a rank's NVLink port
// (2n) and its NIC (2n / C) (NCCL: tree algBw = busBw / 2).
#include <algorithm>
#include <cmath>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

constexpr double kChunkBytes = 512 * 1024;  // the last chunk, run hop by hop
constexpr int kWindow = 8;                  // chunks in flight per edge in phase 2

// Parent (-1 for the root) and children of every rank in tree t.
struct TreeShape {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};

// Tree `mirror` (0 or 1) of channel `channel`.
TreeShape build_tree(const GroupShape& g, int mirror, int channel) {
  TreeShape tree{std::vector<int>(static_cast<std::size_t>(g.size), -1),
                 std::vector<std::vector<int>>(static_cast<std::size_t>(g.size))};
  const int nodes = g.nodes();
  std::vector<int> head(static_cast<std::size_t>(nodes));
  for (int v = 0; v < nodes; ++v) {  // each node's chain, hanging off its head
    const auto& m = g.node_members[static_cast<std::size_t>(v)];
    const auto l = m.size();
    const auto offset = (static_cast<std::size_t>(channel) + (mirror == 0 ? 0 : l / 2)) % l;
    head[static_cast<std::size_t>(v)] = m[offset];
    for (std::size_t k = 1; k < l; ++k)
      tree.parent[static_cast<std::size_t>(m[(k + offset) % l])] = m[(k - 1 + offset) % l];
  }
  for (int v = 0; v < nodes; ++v)  // heads hang off their parent node's head
    if (const int up = node_tree_parent(v, nodes, mirror); up >= 0)
      tree.parent[static_cast<std::size_t>(head[static_cast<std::size_t>(v)])] =
          head[static_cast<std::size_t>(up)];
  for (int r = 0; r < g.size; ++r)
    if (const int p = tree.parent[static_cast<std::size_t>(r)]; p >= 0)
      tree.children[static_cast<std::size_t>(p)].push_back(r);
  return tree;
}

struct TreeRun : std::enable_shared_from_this<TreeRun> {
  std::shared_ptr<CollectiveRun> run;
  int k = 0;
  double chunk = 0;
  std::size_t down_left = 0;  // down-phase transfers not yet arrived (both trees)
  struct State {
    TreeShape shape;
    std::vector<int> up_arrived;     // [rank * k + c]: children that delivered chunk c
    std::vector<char> down_arrived;  // [rank * k + c]: chunk c of the result has arrived
    std::vector<int> up_next, up_busy, have_down;
    std::vector<std::vector<int>> down_next, down_busy;  // per child
  };
  std::vector<State> trees;  // 2 per channel

  [[nodiscard]] std::size_t at(int r, int c) const {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(k) + static_cast<std::size_t>(c);
  }

  void try_up(int t, int r) {
    State& s = trees[static_cast<std::size_t>(t)];
    const auto i = static_cast<std::size_t>(r);
    const auto n_children = static_cast<int>(s.shape.children[i].size());
    while (s.up_busy[i] < kWindow && s.up_next[i] < k && s.up_arrived[at(r, s.up_next[i])] == n_children) {
      const int c = s.up_next[i]++;
      const int parent = s.shape.parent[i];
      if (parent < 0) {  // root: chunk c is fully reduced, start its broadcast
        s.have_down[i] = c + 1;
        try_down(t, r);
        continue;
      }
      ++s.up_busy[i];
      run->transfer(r, parent, chunk, [self = shared_from_this(), t, r, parent, c] {
        State& s2 = self->trees[static_cast<std::size_t>(t)];
        --s2.up_busy[static_cast<std::size_t>(r)];
        ++s2.up_arrived[self->at(parent, c)];
        self->try_up(t, parent);
        self->try_up(t, r);
      });
    }
  }

  void try_down(int t, int r) {
    State& s = trees[static_cast<std::size_t>(t)];
    const auto i = static_cast<std::size_t>(r);
    for (std::size_t j = 0; j < s.shape.children[i].size(); ++j) {
      const int child = s.shape.children[i][j];
      while (s.down_busy[i][j] < kWindow && s.down_next[i][j] < s.have_down[i]) {
        ++s.down_busy[i][j];
        const int c = s.down_next[i][j]++;
        run->transfer(r, child, chunk, [self = shared_from_this(), t, r, j, child, c] {
          State& s2 = self->trees[static_cast<std::size_t>(t)];
          --s2.down_busy[static_cast<std::size_t>(r)][j];
          s2.down_arrived[self->at(child, c)] = 1;
          auto& have = s2.have_down[static_cast<std::size_t>(child)];
          while (have < self->k && s2.down_arrived[self->at(child, have)]) ++have;
          self->try_down(t, child);
          self->try_down(t, r);
          if (--self->down_left == 0) self->run->finish();
        });
      }
    }
  }
};

class DoubleBinaryTree final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::tree; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape&) const override {
    return "";
  }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    auto tr = std::make_shared<TreeRun>();
    const int p = run->size();
    const auto n = static_cast<std::size_t>(p);
    tr->run = run;
    const int channels = run->shape().channels, n_trees = 2 * channels;
    const double tree_bytes = run->bytes() / n_trees;
    tr->k = 1;
    tr->chunk = std::min(tree_bytes, kChunkBytes);
    tr->down_left = static_cast<std::size_t>(n_trees) * static_cast<std::size_t>(tr->k) * (n - 1);
    tr->trees.resize(static_cast<std::size_t>(n_trees));
    for (int t = 0; t < n_trees; ++t) {
      auto& s = tr->trees[static_cast<std::size_t>(t)];
      s.shape = build_tree(run->shape(), t % 2, t / 2);
      s.up_arrived.assign(n * static_cast<std::size_t>(tr->k), 0);
      s.down_arrived.assign(n * static_cast<std::size_t>(tr->k), 0);
      s.up_next.assign(n, 0);
      s.up_busy.assign(n, 0);
      s.have_down.assign(n, 0);
      for (const auto& ch : s.shape.children) {
        s.down_next.emplace_back(ch.size(), 0);
        s.down_busy.emplace_back(ch.size(), 0);
      }
    }
    auto last_chunk = [tr, n_trees, p] {
      for (int t = 0; t < n_trees; ++t)
        for (int r = 0; r < p; ++r) tr->try_up(t, r);
    };
    const double body = tree_bytes - tr->chunk;
    if (body <= 0) {
      last_chunk();
      return;
    }
    auto left = std::make_shared<std::size_t>(2 * static_cast<std::size_t>(n_trees) * (n - 1));
    for (const auto& s : tr->trees)
      for (int r = 0; r < p; ++r)
        if (const int parent = s.shape.parent[static_cast<std::size_t>(r)]; parent >= 0)
          for (auto [from, to] : {std::pair{r, parent}, std::pair{parent, r}})
            run->transfer(from, to, body, [left, last_chunk] {
              if (--*left == 0) last_chunk();
            });
  }

  [[nodiscard]] double estimate_s(const CollectiveCall& call, const GroupShape& g,
                                  const ProtocolCosts& costs) const override {
    return estimate(call, g, costs).seconds();
  }

 private:
  [[nodiscard]] static Time estimate(const CollectiveCall& call, const GroupShape& g,
                                     const ProtocolCosts& costs) {
    const std::int64_t chain = g.max_per_node - 1;
    const std::int64_t levels = node_tree_depth(g.nodes());
    const double chunk = std::min(call.bytes / (2 * g.channels), kChunkBytes);
    const bool inter = g.multi_node();
    const Time intra_hop = chain > 0 ? hop_time(g, costs, false, chunk) : Time{};
    const Time inter_hop = inter ? hop_time(g, costs, true, chunk) : Time{};
    // 2nβ per port: each rank's port carries n/C per tree in each direction; the C channels' trees
    // share a node's C NICs, while every tree crosses every rank's NVLink port.
    // (With one GPU per node there is no NVLink hop: the NICs alone carry the trees.)
    Time stream =
        chain > 0 ? hop_time(g, costs, false, 2 * call.bytes) - hop_time(g, costs, false, 0) : Time{};
    if (inter)
      stream = std::max(stream,
                        hop_time(g, costs, true, 2 * call.bytes / g.channels) - hop_time(g, costs, true, 0));
    return costs.base_latency + 2 * (chain * intra_hop + levels * inter_hop) + stream;
  }
};

}  // namespace

AlgorithmInfo tree_algorithm() {
  return {
      "tree",
      "double binary tree all-reduce across nodes, chains inside nodes, pipelined; tuned across nodes only",
      {CommKind::all_reduce},
      [](const GroupShape& g) { return g.multi_node(); },
      [] { return std::make_unique<DoubleBinaryTree>(); },
      {}};
}

}  // namespace spsim::sim
