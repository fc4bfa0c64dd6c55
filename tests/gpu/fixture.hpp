// Shared setup for the GPU tests: the dtypes each op is checked in, with tolerances.
#pragma once

#include <vector>

#include "runtime/tensor.hpp"

namespace spsim::gpu_test {

// fp64 agrees with the double reference to rounding; fp32 to ~1e-7 per op, so 2e-5 leaves room for
// the sums in these small shapes; bf16 keeps 8 significant bits (≈ 4e-3 per rounding).
struct DtypeCase {
  rt::DType dtype;
  double tol;
};
inline const std::vector<DtypeCase>& exact_dtypes() {
  static const std::vector<DtypeCase> cases{{rt::DType::f64, 1e-10}, {rt::DType::f32, 2e-5}};
  return cases;
}

}  // namespace spsim::gpu_test
