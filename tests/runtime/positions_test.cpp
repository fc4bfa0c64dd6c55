// Positions as runs: canonical runs however built, the i-th position, and causal_pairs against a
// pair-by-pair count.
#include "runtime/core/positions.hpp"

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "runtime/core/types.hpp"
#include "tests/runtime/position_lists.hpp"

using namespace spsim::rt;

namespace {

using test::List;
using test::run_list;

std::int64_t brute_pairs(const List& rows, const List& cols) {
  std::int64_t n = 0;
  for (auto r : rows)
    for (auto c : cols) n += c <= r ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("positions: the greedy maximal runs of a list, and the list back") {
  const Positions p{0, 1, 2, 3, 10, 12, 14, 15, 40};
  // 0..3 (stride 1), 10, 12, 14 (stride 2), then 15 does not continue it: 15, 40 (stride 25).
  const std::vector<Positions::Run> want{{0, 1, 4}, {10, 2, 3}, {15, 25, 2}};
  CHECK(p.runs() == want);
  CHECK(p.size() == 9);
  CHECK(p.ascending());
  CHECK(p.min() == 0);
  CHECK(p.max() == 40);
  CHECK(p.expand() == List{0, 1, 2, 3, 10, 12, 14, 15, 40});
  for (std::int64_t i = 0; i < p.size(); ++i) CHECK(p[i] == p.expand()[static_cast<std::size_t>(i)]);
  CHECK_THROWS_AS((void)p[9], RuntimeError);

  const Positions lone{7};
  CHECK(lone.runs() == std::vector<Positions::Run>{{7, 1, 1}});
  CHECK(Positions{}.empty());
  CHECK(Positions::range(5, 0).empty());

  const Positions shuffled{4, 5, 6, 0, 1, 2};  // an all-gather's chunks in rank order
  CHECK_FALSE(shuffled.ascending());
  CHECK(shuffled.runs() == std::vector<Positions::Run>{{4, 1, 3}, {0, 1, 3}});
  CHECK(shuffled.min() == 0);
  CHECK(shuffled.max() == 6);
}

TEST_CASE("positions: built from runs, appended or expanded, the runs are the same") {
  // Runs that join (a lone position continuing a run; equal strides meeting) and runs that do not.
  const std::vector<std::vector<Positions::Run>> cases{
      {{0, 1, 4}, {4, 1, 4}},               // contiguous chunks 0 and 1 of a contiguous layout: one run
      {{0, 1, 1}, {3, 1, 1}, {6, 3, 2}},    // lone positions 0, 3, then 6, 9: one run of stride 3
      {{0, 1, 3}, {21, 1, 3}},              // zigzag, P = 4, s = 24, rank 0
      {{0, 1, 1}, {7, 1, 1}},               // zigzag with one token per chunk: 0, 7 (stride 7)
      {{2, 4, 6}, {30, 1, 2}, {33, 2, 1}},  // striped then a contiguous tail
      {{5, 2, 3}, {0, 1, 2}, {1, 3, 4}},    // not ascending
  };
  for (const auto& runs : cases) {
    List list;
    for (const auto& r : runs)
      for (auto x : run_list(r.first, r.stride, r.count)) list.push_back(x);
    CAPTURE(list.size());
    const Positions from_runs = Positions::of_runs(runs), from_list(list);
    CHECK(from_runs.runs() == from_list.runs());
    CHECK(from_runs.expand() == list);
    CHECK(from_runs.size() == static_cast<std::int64_t>(list.size()));
    CHECK(from_runs.ascending() == from_list.ascending());
    CHECK(from_runs.min() == from_list.min());
    CHECK(from_runs.max() == from_list.max());
    Positions appended;
    for (const auto& r : runs) appended.append(Positions::of_runs(std::vector<Positions::Run>{r}));
    CHECK(appended.runs() == from_list.runs());
  }
  CHECK(Positions::of_runs(std::vector<Positions::Run>{{0, 1, 4}, {4, 1, 4}}).runs() ==
        std::vector<Positions::Run>{{0, 1, 8}});
  CHECK_THROWS_AS((void)Positions::of_runs(std::vector<Positions::Run>{{3, 0, 2}}), RuntimeError);
}

TEST_CASE("positions: a slice is the same as slicing the expanded list, runs and all") {
  const std::vector<std::vector<Positions::Run>> cases{
      {{0, 1, 8}},
      {{0, 1, 3}, {21, 1, 3}},              // zigzag, P = 4, s = 24, rank 0
      {{2, 4, 6}, {30, 1, 2}, {33, 2, 1}},  // striped then a contiguous tail
      {{5, 2, 3}, {0, 1, 2}, {1, 3, 4}},    // not ascending
  };
  for (const auto& runs : cases) {
    const Positions p = Positions::of_runs(runs);
    const List list = p.expand();
    for (std::int64_t begin = 0; begin <= p.size(); ++begin)
      for (std::int64_t count = 0; begin + count <= p.size(); ++count) {
        CAPTURE(begin);
        CAPTURE(count);
        const List want(list.begin() + begin, list.begin() + begin + count);
        const Positions got = p.slice(begin, count);
        CHECK(got.expand() == want);
        CHECK(got.runs() == Positions(want).runs());  // canonical, as if built from the list
      }
    CHECK_THROWS_AS((void)p.slice(1, p.size()), RuntimeError);
    CHECK_THROWS_AS((void)p.slice(-1, 1), RuntimeError);
  }
}

TEST_CASE("causal_pairs: a pair-by-pair count for runs of any stride, offset and length") {
  // Every combination of small runs, both orders of magnitude of offset, and the clamps at both ends.
  for (std::int64_t a : {-3, 0, 2, 7})
    for (std::int64_t s : {1, 2, 3, 5})
      for (std::int64_t n : {0, 1, 2, 7})
        for (std::int64_t b : {0, 1, 4, 9})
          for (std::int64_t t : {1, 2, 4})
            for (std::int64_t m : {0, 1, 3, 6}) {
              const Positions::Run rows{a, s, n}, cols{b, t, m};
              CAPTURE(a);
              CAPTURE(s);
              CAPTURE(n);
              CAPTURE(b);
              CAPTURE(t);
              CAPTURE(m);
              CHECK(causal_pairs(rows, cols) == brute_pairs(run_list(a, s, n), run_list(b, t, m)));
            }
  // Random lists (several runs each, not sorted).
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    List rows, cols;
    for (List* l : {&rows, &cols}) {
      const int pieces = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < pieces; ++k)
        for (auto x :
             run_list(static_cast<std::int64_t>(rng() % 50), 1 + static_cast<std::int64_t>(rng() % 4),
                      static_cast<std::int64_t>(rng() % 9)))
          l->push_back(x);
    }
    CAPTURE(trial);
    CHECK(causal_pairs(Positions(rows), Positions(cols)) == brute_pairs(rows, cols));
  }
  // Long runs in closed form: a contiguous diagonal block of n has n(n+1)/2 pairs; striped ranks r > q
  // of P over s tokens: rank r's i-th token (r + iP) sees q's tokens j ≤ i: n(n+1)/2.
  constexpr std::int64_t n = 1 << 20, p = 1024;
  CHECK(causal_pairs(Positions::range(5 * n, n), Positions::range(5 * n, n)) == n * (n + 1) / 2);
  CHECK(causal_pairs(Positions::Run{7, p, n}, Positions::Run{3, p, n}) == n * (n + 1) / 2);
  CHECK(causal_pairs(Positions::Run{3, p, n}, Positions::Run{7, p, n}) == n * (n - 1) / 2);
}
