// Token positions as plain lists, for tests that count mask pairs one by one against the runs.
#pragma once

#include <cstdint>
#include <vector>

namespace spsim::rt::test {

using List = std::vector<std::int64_t>;

// first, first + stride, …: `count` positions.
inline List run_list(std::int64_t first, std::int64_t stride, std::int64_t count) {
  List l;
  for (std::int64_t i = 0; i < count; ++i) l.push_back(first + i * stride);
  return l;
}

}  // namespace spsim::rt::test
