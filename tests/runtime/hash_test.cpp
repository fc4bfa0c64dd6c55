// runtime/core/hash.hpp and the dropout mask built on it, against published values and closed forms.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>

#include "runtime/core/dropout_mask.hpp"
#include "runtime/core/hash.hpp"

using spsim::rt::dropout_hash;
using spsim::rt::dropout_keep;
using spsim::rt::mix64;
using spsim::rt::WordHash;

TEST_CASE("mix64 is splitmix64's finaliser: the reference generator's first outputs from state 0") {
  // Vigna's splitmix64.c from x = 0: x += 0x9E3779B97F4A7C15, then the finaliser; its first two outputs
  // are 0xE220A8397B1DCDAF and 0x6E789E6AA1B965F4.
  CHECK(mix64(0x9E3779B97F4A7C15ULL) == 0xE220A8397B1DCDAFULL);
  CHECK(mix64(2 * 0x9E3779B97F4A7C15ULL) == 0x6E789E6AA1B965F4ULL);
  // dropout_hash(seed 0, i) is that generator's output i + 1.
  CHECK(dropout_hash(0, 0) == 0xE220A8397B1DCDAFULL);
  CHECK(dropout_hash(0, 1) == 0x6E789E6AA1B965F4ULL);
}

TEST_CASE("WordHash: equal keys hash alike, and keys a bit apart land apart") {
  CHECK(WordHash().add(1).add(2).value() == WordHash().add(1).add(2).value());
  CHECK(WordHash().add(1).add(2).value() != WordHash().add(2).add(1).value());
  CHECK(WordHash().add_double(0.5).value() == WordHash().add_double(0.25 * 2).value());
  // Keys that differ in one low bit of one field (ranks, tags): all 4096 distinct, and their low 12
  // bits (a table of 4096 buckets) take more than half of the values.
  std::set<std::size_t> full, low;
  for (std::uint64_t r = 0; r < 64; ++r)
    for (std::uint64_t t = 0; t < 64; ++t) {
      const std::size_t h = WordHash().add(7).add(r).add(t).value();
      full.insert(h);
      low.insert(h & 4095);
    }
  CHECK(full.size() == 4096);
  CHECK(low.size() > 2048);
}

TEST_CASE("dropout_keep: p = 0 keeps everything; the kept fraction is 1 − p") {
  int kept = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    CHECK(dropout_keep(3, i, 0.0));
    kept += dropout_keep(3, i, 0.1) ? 1 : 0;
  }
  // Binomial(10000, 0.9): mean 9000, standard deviation 30; 5 σ either side.
  CHECK(kept > 9000 - 150);
  CHECK(kept < 9000 + 150);
}
