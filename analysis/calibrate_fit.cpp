// fit_line: relative least squares for t = α + β·x with α, β ≥ 0.
#include "analysis/calibrate_fit.hpp"

#include <cmath>

#include "runtime/error.hpp"

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

LineFit fit_line(std::span<const double> x, std::span<const double> t, const std::string& where) {
  if (x.size() != t.size() || x.size() < 2)
    throw InputError(where, "a line fit needs at least two measurements, got " + std::to_string(x.size()));
  Sums s;
  bool distinct = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(t[i] > 0) || !std::isfinite(t[i]) || !std::isfinite(x[i]))
      throw InputError(where, "measurement " + std::to_string(i) + " has a time that is not a positive number");
    const double w = 1.0 / (t[i] * t[i]);
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

}  // namespace spsim::analysis
