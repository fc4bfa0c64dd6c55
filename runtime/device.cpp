// Shared Device helpers: zeros() and Mask fractions.
#include "runtime/device.hpp"

#include <algorithm>

namespace spsim::rt {

Tensor Device::zeros(const Shape& shape) {
  Tensor t = empty(shape);
  fill(t, 0.0);
  return t;
}

double Mask::unmasked_fraction() const {
  if (!causal) return 1.0;
  const std::size_t nr = rows->size(), nc = cols->size();
  if (nr == 0 || nc == 0) return 0.0;
  // Count allowed pairs: for each row, the number of columns with position <= row position.
  std::vector<std::int64_t> sorted(cols->begin(), cols->end());
  std::sort(sorted.begin(), sorted.end());
  double allowed = 0;
  for (auto r : *rows)
    allowed += static_cast<double>(std::upper_bound(sorted.begin(), sorted.end(), r) - sorted.begin());
  return allowed / (static_cast<double>(nr) * static_cast<double>(nc));
}

}  // namespace spsim::rt
