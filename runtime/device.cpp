// Shared Device helpers: zeros() and Mask fractions.
#include "runtime/device.hpp"

namespace spsim::rt {

Tensor Device::empty_mask(std::int64_t n) {
  const auto e = static_cast<std::int64_t>(dtype_bytes(dtype()));
  return empty({(n + e - 1) / e});
}

Tensor Device::zeros(const Shape& shape) {
  Tensor t = empty(shape);
  fill(t, 0.0);
  return t;
}

double Mask::unmasked_fraction() const {
  if (!masked()) return 1.0;
  if (!rows || !cols) throw RuntimeError("attention mask without row/column positions");
  if (rows->empty() || cols->empty()) return 0.0;
  return static_cast<double>(allowed_pairs(*rows, *cols, causal, bounds)) /
         (static_cast<double>(rows->size()) * static_cast<double>(cols->size()));
}

}  // namespace spsim::rt
