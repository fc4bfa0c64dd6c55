// Double binary tree all-reduce (NCCL's "tree"), pipelined in chunks.
//
// Two binary trees over the ranks each reduce and then broadcast half of the buffer: tree 0 is the
// heap-ordered tree on ranks 0..P−1 (parent of i is (i − 1) / 2), tree 1 the same tree on the
// mirrored ranks P − 1 − i, so most ranks that are interior in one tree are leaves in the other
// (Sanders, Speck & Träff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan",
// Parallel Computing 2009). Each half moves in K chunks: a rank sends chunk c to its parent once
// all its children delivered chunk c; the root turns reduced chunks around and every rank forwards
// chunk c to its children once it has it. Up to 8 chunks are in flight per edge (NCCL's buffer
// slots), so per-step latency overlaps the transfers.
// Tuner estimate, NCCL's tree model: T = base + 2 D α + 2 n β (+ the pipeline fill of 2D chunks),
// D = floor(log2 P), β on the slowest hop (NCCL: tree algBw = busBw / 2).
#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/collectives/builtin.hpp"

namespace spsim::sim {

namespace {

constexpr double kChunkBytes = 1 << 20;  // pipeline granularity per tree
constexpr int kMaxChunks = 32;
constexpr int kWindow = 8;  // chunks in flight per tree edge (NCCL_STEPS buffer slots)

int chunk_count(double n) { return std::clamp(static_cast<int>(std::ceil(n / 2 / kChunkBytes)), 1, kMaxChunks); }

struct TreeRun : std::enable_shared_from_this<TreeRun> {
  std::shared_ptr<CollectiveRun> run;
  int p = 0, k = 0;
  double chunk = 0;
  std::size_t down_left = 0;  // down-phase transfers not yet arrived (both trees)
  struct Tree {
    std::vector<int> rank_of_label;
    std::vector<int> up_arrived;  // [label * k + c]: children that delivered chunk c
    std::vector<char> down_arrived;  // [label * k + c]: chunk c of the result has arrived
    std::vector<int> up_next, have_down;
    std::vector<int> up_busy;  // chunks in flight to the parent
    std::vector<std::array<int, 2>> down_next;
    std::vector<std::array<int, 2>> down_busy;  // chunks in flight to each child
  };
  std::array<Tree, 2> trees;

  [[nodiscard]] int children(int l) const { return (2 * l + 1 < p) + (2 * l + 2 < p); }

  void try_up(int t, int l) {
    Tree& tr = trees[static_cast<std::size_t>(t)];
    const auto i = static_cast<std::size_t>(l);
    while (tr.up_busy[i] < kWindow && tr.up_next[i] < k &&
           tr.up_arrived[i * static_cast<std::size_t>(k) + static_cast<std::size_t>(tr.up_next[i])] == children(l)) {
      const int c = tr.up_next[i];
      if (l == 0) {  // root: chunk c is fully reduced, start its broadcast
        ++tr.up_next[i];
        tr.have_down[0] = c + 1;
        try_down(t, 0);
        continue;
      }
      ++tr.up_busy[i];
      ++tr.up_next[i];
      const int parent = (l - 1) / 2;
      run->transfer(tr.rank_of_label[i], tr.rank_of_label[static_cast<std::size_t>(parent)], chunk,
                    [self = shared_from_this(), t, l, parent, c] {
                      Tree& tr2 = self->trees[static_cast<std::size_t>(t)];
                      --tr2.up_busy[static_cast<std::size_t>(l)];
                      ++tr2.up_arrived[static_cast<std::size_t>(parent * self->k + c)];
                      self->try_up(t, parent);
                      self->try_up(t, l);
                    });
    }
  }

  void try_down(int t, int l) {
    Tree& tr = trees[static_cast<std::size_t>(t)];
    const auto i = static_cast<std::size_t>(l);
    for (int j = 0; j < 2; ++j) {
      const int child = 2 * l + 1 + j;
      const auto jj = static_cast<std::size_t>(j);
      while (child < p && tr.down_busy[i][jj] < kWindow && tr.down_next[i][jj] < tr.have_down[i]) {
        ++tr.down_busy[i][jj];
        const int c = tr.down_next[i][jj]++;
        run->transfer(tr.rank_of_label[i], tr.rank_of_label[static_cast<std::size_t>(child)], chunk,
                      [self = shared_from_this(), t, l, j, child, c] {
                        Tree& tr2 = self->trees[static_cast<std::size_t>(t)];
                        --tr2.down_busy[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)];
                        const auto ch = static_cast<std::size_t>(child), kk = static_cast<std::size_t>(self->k);
                        tr2.down_arrived[ch * kk + static_cast<std::size_t>(c)] = 1;
                        while (tr2.have_down[ch] < self->k &&
                               tr2.down_arrived[ch * kk + static_cast<std::size_t>(tr2.have_down[ch])])
                          ++tr2.have_down[ch];
                        self->try_down(t, child);
                        self->try_down(t, l);
                        if (--self->down_left == 0) self->run->finish();
                      });
      }
    }
  }
};

class DoubleBinaryTree final : public Algorithm {
 public:
  [[nodiscard]] AlgorithmFamily family() const override { return AlgorithmFamily::tree; }
  [[nodiscard]] std::string unsupported(const CollectiveCall&, const GroupShape&) const override { return ""; }

  void run(const std::shared_ptr<CollectiveRun>& run) const override {
    auto tr = std::make_shared<TreeRun>();
    tr->run = run;
    tr->p = run->size();
    tr->k = chunk_count(run->bytes());
    tr->chunk = run->bytes() / 2 / tr->k;
    tr->down_left = 2 * static_cast<std::size_t>(tr->k) * static_cast<std::size_t>(tr->p - 1);
    const auto n = static_cast<std::size_t>(tr->p);
    for (int t = 0; t < 2; ++t) {
      auto& tree = tr->trees[static_cast<std::size_t>(t)];
      for (int l = 0; l < tr->p; ++l) tree.rank_of_label.push_back(t == 0 ? l : tr->p - 1 - l);
      tree.up_arrived.assign(n * static_cast<std::size_t>(tr->k), 0);
      tree.up_next.assign(n, 0);
      tree.have_down.assign(n, 0);
      tree.up_busy.assign(n, 0);
      tree.down_arrived.assign(n * static_cast<std::size_t>(tr->k), 0);
      tree.down_next.assign(n, {0, 0});
      tree.down_busy.assign(n, {0, 0});
    }
    for (int t = 0; t < 2; ++t)
      for (int l = tr->p - 1; l >= 0; --l) tr->try_up(t, l);
  }

  [[nodiscard]] Time estimate(const CollectiveCall& call, const GroupShape& g, const ProtocolCosts& costs) const override {
    const std::int64_t depth = std::bit_width(static_cast<unsigned>(g.size)) - 1;
    const bool inter = g.multi_node();
    const int k = chunk_count(call.bytes);
    const Time hop_latency = hop_time(g, costs, inter, 0);
    const Time stream = hop_time(g, costs, inter, 2 * call.bytes) - hop_latency;  // 2nβ
    const Time fill = hop_time(g, costs, inter, call.bytes / k) - hop_latency;    // one chunk of each tree
    return costs.base_latency + 2 * depth * (hop_latency + fill) + stream;
  }
};

}  // namespace

AlgorithmInfo tree_algorithm() {
  return {"tree", "double binary tree all-reduce (reduce up, broadcast down), pipelined; tuned across nodes only",
          {CollectiveKind::all_reduce},
          [](const GroupShape& g) { return g.multi_node(); },
          [] { return std::make_unique<DoubleBinaryTree>(); }};
}

}  // namespace spsim::sim
