// Sequence layouts (see layouts.hpp).
#include "strategies/layouts.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <numeric>

#include "runtime/core/mask_bounds.hpp"

namespace spsim::strategies {

namespace {

using Run = rt::Positions::Run;

// The balanced layout of one (degree, problem): every rank's positions. Computed once and kept, since
// a strategy asks for every owner's positions on every rank.
struct Balanced {
  int degree = 0;
  std::int64_t seq_len = 0;
  bool causal = false;
  rt::MaskBounds bounds;
  std::vector<rt::Positions> ranks;
};

std::vector<rt::Positions> balance(int degree, const models::AttnProblem& p) {
  const int k = balanced_chunks_per_rank(degree, p.seq_len);
  const std::int64_t chunks = static_cast<std::int64_t>(k) * degree, c = p.seq_len / chunks;
  const rt::Positions all = rt::Positions::range(0, p.seq_len);
  std::vector<std::int64_t> area(static_cast<std::size_t>(chunks));
  for (std::int64_t i = 0; i < chunks; ++i)
    area[static_cast<std::size_t>(i)] = rt::allowed_pairs(rt::Positions::range(i * c, c), all, p.causal, &p.bounds);
  std::vector<std::int64_t> order(static_cast<std::size_t>(chunks));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return area[static_cast<std::size_t>(a)] > area[static_cast<std::size_t>(b)];
  });
  const auto P = static_cast<std::size_t>(degree);
  std::vector<std::vector<std::int64_t>> held(P);
  std::vector<std::int64_t> load(P, 0);
  for (const std::int64_t i : order) {
    std::size_t best = P;
    for (std::size_t r = 0; r < P; ++r)
      if (held[r].size() < static_cast<std::size_t>(k) && (best == P || load[r] < load[best])) best = r;
    held[best].push_back(i);
    load[best] += area[static_cast<std::size_t>(i)];
  }
  // Swaps: the busiest rank trades one chunk for a lighter one of another rank when that lowers the
  // larger of the two loads (at most 256 rounds: each costs P·k² comparisons).
  for (int round = 0; round < 256; ++round) {
    const auto top = static_cast<std::size_t>(std::max_element(load.begin(), load.end()) - load.begin());
    std::int64_t best_gain = 0;
    std::size_t br = 0, bi = 0, bj = 0;
    for (std::size_t r = 0; r < P; ++r) {
      if (r == top) continue;
      for (std::size_t i = 0; i < held[top].size(); ++i)
        for (std::size_t j = 0; j < held[r].size(); ++j) {
          const std::int64_t d =
              area[static_cast<std::size_t>(held[top][i])] - area[static_cast<std::size_t>(held[r][j])];
          if (d <= 0) continue;
          const std::int64_t new_max = std::max(load[top] - d, load[r] + d);
          const std::int64_t gain = load[top] - new_max;
          if (gain > best_gain) best_gain = gain, br = r, bi = i, bj = j;
        }
    }
    if (best_gain <= 0) break;
    const std::int64_t d = area[static_cast<std::size_t>(held[top][bi])] - area[static_cast<std::size_t>(held[br][bj])];
    std::swap(held[top][bi], held[br][bj]);
    load[top] -= d;
    load[br] += d;
  }
  std::vector<rt::Positions> out;
  for (auto& h : held) {
    std::sort(h.begin(), h.end());
    std::vector<Run> runs;
    for (const std::int64_t i : h) runs.push_back({i * c, 1, c});
    out.push_back(rt::Positions::of_runs(runs));
  }
  return out;
}

rt::Positions balanced_runs(int rank, int degree, const models::AttnProblem& p) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const Balanced>> cache;  // the last few problems
  std::shared_ptr<const Balanced> hit;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const auto& b : cache)
      if (b->degree == degree && b->seq_len == p.seq_len && b->causal == p.causal && b->bounds == p.bounds) hit = b;
  }
  if (!hit) {
    auto b = std::make_shared<Balanced>();
    b->degree = degree;
    b->seq_len = p.seq_len;
    b->causal = p.causal;
    b->bounds = p.bounds;
    b->ranks = balance(degree, p);
    const std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() >= 16) cache.erase(cache.begin());
    cache.push_back(b);
    hit = b;
  }
  return hit->ranks[static_cast<std::size_t>(rank)];
}

rt::Positions zigzag_of(std::int64_t first, std::int64_t length, int rank, int degree) {
  const std::int64_t half = length / (2 * degree);
  const std::array<Run, 2> chunks{Run{first + rank * half, 1, half},
                                  Run{first + (2 * degree - 1 - rank) * half, 1, half}};
  return rt::Positions::of_runs(chunks);
}

}  // namespace

const std::vector<std::string>& layout_names() {
  static const std::vector<std::string> names = {"contiguous", "zigzag", "striped", "document_zigzag", "balanced"};
  return names;
}

Layout parse_layout(const std::string& name) {
  if (name == "zigzag") return Layout::zigzag;
  if (name == "striped") return Layout::striped;
  if (name == "document_zigzag") return Layout::document_zigzag;
  if (name == "balanced") return Layout::balanced;
  return Layout::contiguous;
}

int balanced_chunks_per_rank(int degree, std::int64_t seq_len) {
  for (int k : {16, 8, 4, 2, 1})
    if (seq_len % (static_cast<std::int64_t>(k) * degree) == 0) return k;
  return 0;
}

rt::Positions layout_runs(Layout layout, int rank, int degree, const models::AttnProblem& p) {
  const std::int64_t seq_len = p.seq_len;
  switch (layout) {
    case Layout::zigzag:
      return zigzag_of(0, seq_len, rank, degree);
    case Layout::document_zigzag: {
      if (!p.bounds.has_documents()) return zigzag_of(0, seq_len, rank, degree);
      rt::Positions out;
      const auto starts = p.bounds.document_starts();
      for (std::size_t d = 0; d + 1 < starts.size(); ++d)
        out.append(zigzag_of(starts[d], starts[d + 1] - starts[d], rank, degree));
      return out;
    }
    case Layout::balanced:
      return balanced_runs(rank, degree, p);
    case Layout::striped: {
      const std::array<Run, 1> run{Run{rank, degree, rank < seq_len ? (seq_len - rank + degree - 1) / degree : 0}};
      return rt::Positions::of_runs(run);
    }
    case Layout::contiguous:
      break;
  }
  const std::int64_t chunk = seq_len / degree;
  return rt::Positions::range(rank * chunk, chunk);
}

std::optional<std::string> layout_check(Layout layout, int degree, const models::AttnProblem& p) {
  const std::int64_t seq_len = p.seq_len;
  const std::string s = std::to_string(seq_len), dp = std::to_string(degree), two_p = std::to_string(2 * degree);
  if (layout == Layout::zigzag || (layout == Layout::document_zigzag && !p.bounds.has_documents())) {
    if (seq_len % (2 * degree) != 0)
      return "seq_len " + s + " is not divisible by 2 x degree = " + two_p +
             ": the zigzag layout cuts the sequence into 2P equal chunks (rank r holds chunks r and 2P-1-r)";
    return std::nullopt;
  }
  if (layout == Layout::document_zigzag) {
    const auto lengths = p.bounds.document_lengths();
    for (std::size_t d = 0; d < lengths.size(); ++d)
      if (lengths[d] % (2 * degree) != 0)
        return "document " + std::to_string(d) + " has " + std::to_string(lengths[d]) +
               " tokens, not divisible by 2 x degree = " + two_p +
               ": the document_zigzag layout cuts every document into 2P equal chunks (pad the documents)";
    return std::nullopt;
  }
  if (seq_len % degree != 0)
    return "seq_len " + s + " is not divisible by the degree " + dp + ": the " +
           (layout == Layout::striped    ? "striped layout deals tokens round-robin (token t on rank t mod P)"
            : layout == Layout::balanced ? "balanced layout deals s/P tokens to every rank in equal chunks"
                                         : "contiguous layout gives every rank s/P consecutive tokens") +
           " and every rank must hold the same number of tokens";
  return std::nullopt;
}

}  // namespace spsim::strategies
