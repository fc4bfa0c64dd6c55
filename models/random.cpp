// splitmix64 and Box–Muller (formulas in random.hpp).
#include "models/random.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace spsim::models {

std::uint64_t SplitMix64::next_u64() {
  state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

double SplitMix64::next_uniform() {
  constexpr double two_pow_minus_53 = 1.0 / 9007199254740992.0;
  return static_cast<double>(next_u64() >> 11U) * two_pow_minus_53;
}

double SplitMix64::next_normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - next_uniform();  // (0, 1]: keeps log(u1) finite
  const double u2 = next_uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  // Two rounds of the splitmix64 mixer over (seed, stream): nearby seeds and streams give unrelated states.
  SplitMix64 mix(seed);
  SplitMix64 mix2(mix.next_u64() ^ (stream * 0xD1B54A32D192ED03ULL));
  return mix2.next_u64();
}

std::vector<double> random_vector(std::int64_t n, std::uint64_t seed, double stddev) {
  if (n < 0) throw std::invalid_argument("random_vector: negative length " + std::to_string(n));
  SplitMix64 rng(seed);
  std::vector<double> out(static_cast<std::size_t>(n));
  for (double& value : out) value = stddev * rng.next_normal();
  return out;
}

}  // namespace spsim::models
