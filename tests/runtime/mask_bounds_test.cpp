// Document and window bounds: allowed_pairs against a pair-by-pair count of the definition written out
// here, the key interval of a query, and the CPU attention kernels' masked blocks.
#include "runtime/core/mask_bounds.hpp"

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "runtime/core/types.hpp"
#include "tests/runtime/position_lists.hpp"

using namespace spsim::rt;

namespace {

using test::List;
using test::run_list;

// The definition, pair by pair: causal direction, same document (documents laid end to end from 0),
// |q − k| < window.
std::int64_t brute(const List& rows, const List& cols, bool causal, const List& lengths, std::int64_t window) {
  const auto doc = [&](std::int64_t p) {
    std::int64_t d = 0, end = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      end += lengths[i];
      if (p < end) return static_cast<std::int64_t>(i);
      d = static_cast<std::int64_t>(i);
    }
    return d;
  };
  std::int64_t n = 0;
  for (auto q : rows)
    for (auto k : cols) {
      if (causal && k > q) continue;
      if (window > 0 && (q - k >= window || k - q >= window)) continue;
      if (!lengths.empty() && doc(q) != doc(k)) continue;
      ++n;
    }
  return n;
}

}  // namespace

TEST_CASE("allowed_pairs: a pair-by-pair count for documents, windows and both, causal or not") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 400; ++trial) {
    // Documents covering [0, 60), or none.
    List lengths;
    if (trial % 3 != 0) {
      std::int64_t total = 0;
      while (total < 60) {
        const std::int64_t len = std::min<std::int64_t>(1 + static_cast<std::int64_t>(rng() % 15), 60 - total);
        lengths.push_back(len);
        total += len;
      }
    }
    const std::int64_t window = trial % 4 == 0 ? 0 : 1 + static_cast<std::int64_t>(rng() % 12);
    List rows, cols;
    for (List* l : {&rows, &cols}) {
      const int pieces = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < pieces; ++k)
        for (auto x : run_list(static_cast<std::int64_t>(rng() % 40), 1 + static_cast<std::int64_t>(rng() % 5),
                               static_cast<std::int64_t>(rng() % 10)))
          l->push_back(x);
    }
    const MaskBounds bounds(lengths, window);
    for (bool causal : {false, true}) {
      CAPTURE(trial);
      CAPTURE(causal);
      CHECK(allowed_pairs(Positions(rows), Positions(cols), causal, &bounds) ==
            brute(rows, cols, causal, lengths, window));
    }
  }
}

TEST_CASE("allowed_pairs in closed form on long runs") {
  // One document of n per rank-sized chunk, contiguous rows and cols in the same chunk: causal pairs
  // n(n+1)/2; the next chunk (another document) sees none.
  constexpr std::int64_t n = 1 << 20;
  const List lengths{n, n, n};
  const MaskBounds docs(lengths, 0);
  CHECK(allowed_pairs(Positions::range(n, n), Positions::range(n, n), true, &docs) == n * (n + 1) / 2);
  CHECK(allowed_pairs(Positions::range(2 * n, n), Positions::range(n, n), true, &docs) == 0);
  // A causal window w over one long run: the first w rows see 1..w keys, the rest w each.
  constexpr std::int64_t w = 4096;
  const MaskBounds window({}, w);
  CHECK(allowed_pairs(Positions::range(0, n), Positions::range(0, n), true, &window) ==
        w * (w + 1) / 2 + (n - w) * w);
  // Both directions: every row sees 2w − 1 keys, less at the two ends (w(w−1)/2 missing at each).
  CHECK(allowed_pairs(Positions::range(0, n), Positions::range(0, n), false, &window) ==
        n * (2 * w - 1) - w * (w - 1));
}

TEST_CASE("key_range is the interval of keys the definition allows") {
  const List lengths{5, 1, 9, 3};
  for (std::int64_t window : {0, 1, 2, 4, 30}) {
    const MaskBounds b(lengths, window);
    for (bool causal : {false, true})
      for (std::int64_t q = 0; q < 18; ++q) {
        CAPTURE(window);
        CAPTURE(causal);
        CAPTURE(q);
        const auto [lo, hi] = b.key_range(q, causal, 18);
        for (std::int64_t k = 0; k < 18; ++k)
          CHECK((lo <= k && k <= hi) == (brute({q}, {k}, causal, lengths, window) == 1));
      }
  }
}

TEST_CASE("MaskBounds: documents, describe and bad parameters") {
  const MaskBounds b(List{5, 1, 9}, 0);
  CHECK(b.active());
  CHECK(b.document_count() == 3);
  CHECK(b.documents_length() == 15);
  CHECK(b.document_lengths() == List{5, 1, 9});
  CHECK(b.document_of(0) == 0);
  CHECK(b.document_of(5) == 1);
  CHECK(b.document_of(6) == 2);
  CHECK(b.document_of(14) == 2);
  CHECK(b.describe(true) == "document_causal (3 documents)");
  CHECK(MaskBounds({}, 8).describe(true) == "sliding_window (causal), window 8");
  CHECK(MaskBounds(List{4, 4}, 2).describe(true) == "document_causal (2 documents), window 2");
  CHECK(!MaskBounds().active());
  CHECK(MaskBounds().describe(false) == "full");
  CHECK(MaskBounds(List{5, 1, 9}, 0) == b);
  CHECK(!(MaskBounds(List{5, 10}, 0) == b));
  CHECK_THROWS_AS(MaskBounds(List{3, 0}, 0), RuntimeError);
  CHECK_THROWS_AS(MaskBounds({}, -1), RuntimeError);
}
