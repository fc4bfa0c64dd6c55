// Hashing 64-bit words: one helper for spsim's hash maps (trace shapes, kernel launches, replay messages)
// and for counter-based random draws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SPSIM_HOST_DEVICE __host__ __device__
#else
#define SPSIM_HOST_DEVICE
#endif

namespace spsim::rt {

// splitmix64's finaliser (Steele, Lea and Flood 2014): a bijection of 64-bit words whose output bits
// each depend on every input bit.
SPSIM_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A key's fields folded word by word (FNV-1a's step), finalised by mix64 so that keys differing in a
// few low bits (ranks, tags, small dimensions) still spread over the buckets.
class WordHash {
 public:
  constexpr WordHash& add(std::uint64_t v) {
    h_ = (h_ ^ v) * 1099511628211ULL;
    return *this;
  }
  // By its bits: equal values hash alike (but +0 and −0, which at worst stores a key twice).
  WordHash& add_double(double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  [[nodiscard]] constexpr std::size_t value() const { return static_cast<std::size_t>(mix64(h_)); }

 private:
  std::uint64_t h_ = 1469598103934665603ULL;
};

}  // namespace spsim::rt
