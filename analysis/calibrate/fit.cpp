// fit_line: relative least squares for t = α + β·x with α, β ≥ 0.
#include "analysis/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace {

struct Sums {
  double s = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
};

double rms_relative(std::span<const double> x, std::span<const double> t, double alpha, double beta) {
  double e2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = (t[i] - alpha - beta * x[i]) / t[i];
    e2 += e * e;
  }
  return std::sqrt(e2 / static_cast<double>(x.size()));
}

}  // namespace

LineFit fit_line(std::span<const double> x, std::span<const double> t, const std::string& where,
                 Weighting weighting) {
  if (x.size() != t.size() || x.size() < 2)
    throw InputError(where, "a line fit needs at least two measurements, got " + std::to_string(x.size()));
  Sums s;
  bool distinct = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(t[i] > 0) || !std::isfinite(t[i]) || !std::isfinite(x[i]))
      throw InputError(where,
                       "measurement " + std::to_string(i) + " has a time that is not a positive number");
    const double w = weighting == Weighting::relative ? 1.0 / (t[i] * t[i]) : 1.0;
    s.s += w, s.sx += w * x[i], s.sxx += w * x[i] * x[i], s.st += w * t[i], s.sxt += w * x[i] * t[i];
    distinct = distinct || x[i] != x[0];
  }
  if (!distinct) throw InputError(where, "a line fit needs measurements at two or more different sizes");
  LineFit f;
  f.points = static_cast<int>(x.size());
  f.beta = (s.s * s.sxt - s.sx * s.st) / (s.s * s.sxx - s.sx * s.sx);
  f.alpha = (s.st - f.beta * s.sx) / s.s;
  if (f.alpha < 0) f.alpha = 0, f.beta = s.sxt / s.sxx;
  if (f.beta < 0) f.beta = 0, f.alpha = s.st / s.s;
  f.residual = rms_relative(x, t, f.alpha, f.beta);
  return f;
}

LineFit fit_rate(std::span<const double> x, std::span<const double> t, const std::string& where) {
  (void)fit_line(x, t, where);  // the same validation
  double sxt = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxt += x[i] * t[i], sxx += x[i] * x[i];
  LineFit f;
  f.points = static_cast<int>(x.size());
  f.beta = sxt / sxx;
  f.residual = rms_relative(x, t, 0, f.beta);
  return f;
}

RobustFit fit_line_robust(std::span<const double> x, std::span<const double> t, const std::string& where,
                          Weighting weighting) {
  RobustFit out{fit_line(x, t, where, weighting), 0};
  std::vector<double> err(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    err[i] = std::abs((t[i] - out.fit.alpha - out.fit.beta * x[i]) / t[i]);
  std::vector<double> sorted = err;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  const double bound = std::max(0.05, 3 * sorted[sorted.size() / 2]);
  std::vector<double> kx, kt;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (err[i] <= bound) kx.push_back(x[i]), kt.push_back(t[i]);
  const bool distinct =
      !kx.empty() && std::any_of(kx.begin(), kx.end(), [&](double v) { return v != kx[0]; });
  if (kx.size() == x.size() || kx.size() < 2 || !distinct) return out;
  out.fit = fit_line(kx, kt, where, weighting);
  out.dropped = static_cast<int>(x.size() - kx.size());
  return out;
}

}  // namespace spsim::analysis
