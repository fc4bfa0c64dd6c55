// Tensor-by-tensor comparison against a reference, with a diagnosis computed from the numbers.
//
// For a strategy's tensor g and the reference r (flattened):
//   relative error  ‖g − r‖ / ‖r‖,  max abs error  max |g − r|,
//   best-fit scale  α = ⟨g, r⟩ / ⟨r, r⟩  (the least-squares minimiser of ‖g − α r‖),
//   residual        ‖g − α r‖ / ‖α r‖   (how far g is from ANY multiple of r).
// Verdict: pass when the relative error is within the dtype's tolerance. Otherwise, when the residual
// is within tolerance g is a uniform multiple of r: the diagnosis names α and, when α is a simple
// fraction n/m (m ≤ 64), the fraction and its relation to the world size or the TP size; else g "differs, not by a
// uniform scale".
// Zero gradients: a tensor whose true gradient is identically zero (the key bias: softmax ignores a
// shift of a whole score row) has a reference made of rounding noise, against which a relative error
// means nothing. Errors are therefore measured against max(‖r‖, floor), where the caller sets `floor`
// from the scale of the whole problem (e.g. 1e-3 × the largest reference norm).
#pragma once

#include <span>
#include <string>

#include "runtime/tensor.hpp"

namespace spsim::analysis {

struct Comparison {
  double rel_err = 0;
  double max_abs_err = 0;
  double alpha = 1;     // best-fit scale
  double residual = 0;  // after scaling by alpha
  bool pass = true;
  std::string diagnosis;
};

// The group sizes a scale is named after: the sequence-parallel world size (the strategy's degree, the
// "local world size" RSA divides by) and the tensor-parallel size.
struct GroupSizes {
  int world_size = 1;
  int tp = 1;
  GroupSizes(int world, int tensor_parallel = 1)  // NOLINT(google-explicit-constructor): a size is a group
      : world_size(world), tp(tensor_parallel) {}
};

// Tolerance on the relative error for results computed in `dtype` (float64 ~1e-10, float32 ~1e-4).
[[nodiscard]] double tolerance_for(rt::DType dtype);

[[nodiscard]] Comparison compare_tensors(std::span<const double> got, std::span<const double> ref, double tol,
                                         GroupSizes sizes, const std::string& name, double floor = 0.0);

// "0.2500 × reference (= 1/4 = 1/world_size)" for alpha = 0.25 and world_size 4; "(= 1/2 = 1/tp)" for
// 0.5 and tp 2.
[[nodiscard]] std::string describe_scale(double alpha, GroupSizes sizes, double tol);

}  // namespace spsim::analysis
