// Deterministic random numbers for reference inputs and weights: splitmix64 + Box–Muller, no <random>.
//
// The standard library's distributions (std::normal_distribution, ...) are implementation-defined, so
// the same seed could give different tensors with libstdc++ and libc++. These generators are written out
// so that a seed names the same values everywhere (up to the last ulp of libm's log/cos/sin).
#pragma once

#include <cstdint>
#include <vector>

namespace spsim::models {

// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
//   state += 0x9E3779B97F4A7C15;  z = state;
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;  z = (z ^ (z >> 27)) * 0x94D049BB133111EB;  z ^= z >> 31.
// Normal deviates by the Box–Muller transform (Box and Muller, Ann. Math. Statist. 29, 1958):
//   u1 ∈ (0, 1], u2 ∈ [0, 1):  z0 = √(−2 ln u1) cos(2π u2),  z1 = √(−2 ln u1) sin(2π u2).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next_u64();
  double next_uniform();  // in [0, 1): the top 53 bits of next_u64() / 2^53
  double next_normal();   // N(0, 1); consumes two uniforms per pair of deviates

 private:
  std::uint64_t state_;
  double spare_ = 0.0;  // the second Box–Muller deviate, returned by the next call
  bool has_spare_ = false;
};

// An independent stream for sub-object `stream` of a seeded whole (e.g. parameter tensor i of a layer),
// so one tensor's values do not depend on the sizes of the tensors generated before it.
[[nodiscard]] std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// n independent N(0, stddev²) values from SplitMix64(seed).
[[nodiscard]] std::vector<double> random_vector(std::int64_t n, std::uint64_t seed, double stddev = 1.0);

}  // namespace spsim::models
