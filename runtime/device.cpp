// Shared Device helpers: empty_mask(), the dropout checks, zeros() and Mask fractions.
#include "runtime/device.hpp"

#include <string>

namespace spsim::rt {

Tensor Device::empty_mask(std::int64_t n) {
  const auto e = static_cast<std::int64_t>(dtype_bytes(dtype()));
  return empty({(n + e - 1) / e});
}

void Device::check_dropout(std::string_view op, double p, const Tensor& mask, std::int64_t n) {
  if (!(p >= 0 && p < 1))
    throw RuntimeError(std::string(op) + ": probability " + std::to_string(p) + " is not in [0, 1)");
  if (static_cast<std::uint64_t>(mask.numel()) * dtype_bytes(mask.dtype()) < static_cast<std::uint64_t>(n))
    throw RuntimeError(std::string(op) + ": mask " + to_string(mask.shape()) + " holds fewer than the " +
                       std::to_string(n) + " bytes of a byte per element");
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
