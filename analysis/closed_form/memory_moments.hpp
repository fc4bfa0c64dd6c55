// Internals of the memory model (analysis/memory_model*.cpp): a moment of the step and the per-strategy
// lists.
#pragma once

#include <string>
#include <vector>

#include "analysis/closed_form/memory_model.hpp"

namespace spsim::analysis::detail {

// What is alive at one moment of the step; the peak is the largest moment.
struct Moment {
  std::string name;
  std::vector<MemoryTerm> terms;
  [[nodiscard]] double total() const {
    double t = 0;
    for (const auto& x : terms) t += x.bytes;
    return t;
  }
};

// Attention scope, one rank (memory_model.hpp derives each list); `backward`: passes fwd+bwd.
[[nodiscard]] std::vector<Moment> ulysses_moments(const Config& c, bool backward);
[[nodiscard]] std::vector<Moment> ring_moments(const Config& c, bool backward);
[[nodiscard]] std::vector<Moment> usp_moments(const Config& c, bool backward);
[[nodiscard]] std::vector<Moment> allgather_kv_moments(const Config& c, bool backward);

}  // namespace spsim::analysis::detail
