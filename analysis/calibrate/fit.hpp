// Least-squares fits for calibration: the α-β line t = α + β·x through timings.
//
// Weighting::relative minimises the RELATIVE error,  Σ_i ((t_i − α − β x_i) / t_i)²,  i.e. ordinary least
// squares on the rows (1/t_i, x_i/t_i) against 1 (Hockney's α-β model fitted as in the LogP/α-β calibration
// literature, where sizes span many decades: an absolute fit would let the largest message decide α).
// Weighting::absolute minimises Σ_i (t_i − α − β x_i)²: the largest operations decide the rate, as
// they decide a step's time (compute classes, whose rate changes with the working set).
// The normal equations of the 2×2 system are solved in closed form:
//   with w_i = 1/t_i² (relative) or 1 (absolute), S = Σw, Sx = Σw x, Sxx = Σw x², St = Σw t, Sxt = Σw x t,
//   β = (S·Sxt − Sx·St) / (S·Sxx − Sx²),   α = (St − β·Sx) / S.
// Both parameters are physical (a latency and a time per byte) and so constrained to be ≥ 0: when the
// unconstrained optimum has a negative one, it is fixed at 0 and the other refitted alone
// (β = Sxt/Sxx, or α = St/S), which is the constrained optimum of this convex problem.
// The residual reported is the root mean square of the relative errors, sqrt(Σ((t_i − t̂_i)/t_i)² / n).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace spsim::analysis {

struct LineFit {
  double alpha = 0;     // intercept, in the unit of t
  double beta = 0;      // slope, t per unit of x
  double residual = 0;  // RMS relative error
  int points = 0;
};

enum class Weighting : std::uint8_t { relative, absolute };

// Needs at least two points with distinct x and every t > 0; otherwise InputError at `where`.
[[nodiscard]] LineFit fit_line(std::span<const double> x, std::span<const double> t, const std::string& where,
                               Weighting weighting = Weighting::relative);

// t = β·x through the origin by absolute least squares: β = Σ x t / Σ x². For compute classes, whose
// per-call overhead is negligible against the operations that matter and whose rate falls as the
// operands leave the caches: the largest operations (which dominate a step) decide β.
[[nodiscard]] LineFit fit_rate(std::span<const double> x, std::span<const double> t,
                               const std::string& where);

// fit_line, then once more without the outliers: points whose relative error exceeds both 5% and
// three times the median relative error (a timing hit by another process on a shared machine), if
// at least two points at distinct x remain. `points` and `residual` describe the final fit; `dropped`
// counts the outliers.
struct RobustFit {
  LineFit fit;
  int dropped = 0;
};
[[nodiscard]] RobustFit fit_line_robust(std::span<const double> x, std::span<const double> t,
                                        const std::string& where, Weighting weighting = Weighting::relative);

}  // namespace spsim::analysis
