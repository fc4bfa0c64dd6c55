// The GEMM kernel model (see the header).
#include "sim/compute/gemm_kernel.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace spsim::sim {

double gemm_kernel_s(const rt::GemmShape& g, const GemmParams& p, const SmSpec& sm, double tensor_flops,
                     double hbm_Bps, double out_bytes) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return 0;
  constexpr std::int64_t kStep = 64;
  constexpr std::array<std::array<std::int64_t, 2>, 6> tiles = {
      {{128, 256}, {256, 128}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};
  const double step_s = 2.0 * kStep / (tensor_flops / sm.sm_count * p.mma_efficiency);  // per Mt·Nt
  const double per_sm_Bps = hbm_Bps / sm.sm_count;
  const std::int64_t steps = (g.k + kStep - 1) / kStep;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [mt, nt] : tiles) {
    const std::int64_t count = g.batch * ((g.m + mt - 1) / mt) * ((g.n + nt - 1) / nt);
    const double area = static_cast<double>(mt * nt);
    const double cta =
        static_cast<double>(steps) * area * step_s + p.fill_us * 1e-6 + area * out_bytes / per_sm_Bps;
    const double waves = static_cast<double>((count + sm.sm_count - 1) / sm.sm_count);
    best = std::min(best, waves * cta);
  }
  return best;
}

}  // namespace spsim::sim
