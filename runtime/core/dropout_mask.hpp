// Dropout's keep decision for element i of a tensor, from a seed: a counter-based hash (as Philox is in
// PyTorch and FlashAttention), so that the CPU and CUDA devices draw the same mask. The forward stores
// it, a byte per element, for the backward (Device::dropout). Kept elements are scaled by 1 / (1 − p)
// (inverted dropout: the expectation is the input's).
#pragma once

#include <cstdint>

#include "runtime/core/hash.hpp"

namespace spsim::rt {

// Element i's word: splitmix64 (the golden-ratio step from the seed, then its finaliser).
SPSIM_HOST_DEVICE constexpr std::uint64_t dropout_hash(std::uint64_t seed, std::uint64_t i) {
  return mix64(seed + (i + 1) * 0x9E3779B97F4A7C15ULL);
}

// True when element i is kept: a uniform draw in [0, 1) (53 bits) at or above p.
SPSIM_HOST_DEVICE constexpr bool dropout_keep(std::uint64_t seed, std::uint64_t i, double p) {
  return static_cast<double>(dropout_hash(seed, i) >> 11) * 0x1.0p-53 >= p;
}

}  // namespace spsim::rt
