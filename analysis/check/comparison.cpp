// Relative error, best-fit scale and residual, and the diagnosis derived from them.
#include "analysis/check/comparison.hpp"

#include <cmath>
#include <cstdio>

namespace spsim::analysis {

double tolerance_for(rt::DType dtype) {
  return dtype == rt::DType::f64 ? 1e-10 : 1e-4;
}

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string general(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The simplest fraction n/m (m ≤ 64) within tol·|alpha| of alpha, as {n, m}; {0, 0} if none.
std::pair<long, long> simple_fraction(double alpha, double tol) {
  for (long m = 1; m <= 64; ++m) {
    const long n = std::lround(alpha * static_cast<double>(m));
    if (n != 0 && std::abs(alpha - static_cast<double>(n) / static_cast<double>(m)) <= tol * std::abs(alpha))
      return {n, m};
  }
  return {0, 0};
}

}  // namespace

std::string describe_scale(double alpha, GroupSizes sizes, double tol) {
  std::string s = fixed(alpha, 4) + " × reference";
  const auto [n, m] = simple_fraction(alpha, std::max(tol, 1e-9));
  if (m == 0 || (n == 1 && m == 1)) return s;
  const long p = sizes.world_size, t = sizes.tp;
  std::string frac = m == 1 ? std::to_string(n) : std::to_string(n) + "/" + std::to_string(m);
  // With tensor parallelism the sequence-parallel group is the CP group.
  const std::string group = t > 1 ? "cp" : "world_size";
  if (n == 1 && t > 1 && m == t) return s + " (= " + frac + " = 1/tp" + (m == p ? " = 1/cp)" : ")");
  if (n == 1 && m == p) return s + " (= " + frac + " = 1/" + group + ")";
  if (n == p && m == 1) return s + " (= " + frac + " = " + group + ")";
  if (n == 1 && m == p * p) return s + " (= " + frac + " = 1/" + group + "²)";
  if (n == -1 && m == 1) return s + " (= -1: sign flipped)";
  return s + " (= " + frac + ")";
}

Comparison compare_tensors(std::span<const double> got, std::span<const double> ref, double tol,
                           GroupSizes sizes, const std::string& name, double floor) {
  Comparison c;
  double diff2 = 0, ref2 = 0, got2 = 0, dot = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = got[i] - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    got2 += got[i] * got[i];
    dot += got[i] * ref[i];
    c.max_abs_err = std::max(c.max_abs_err, std::abs(d));
  }
  const bool finite = std::isfinite(diff2) && std::isfinite(got2);
  const double denom = std::max(std::sqrt(ref2), floor);
  const bool ref_is_zero = std::sqrt(ref2) < floor || ref2 == 0;
  c.rel_err = denom > 0 ? std::sqrt(diff2) / denom : std::sqrt(diff2);
  c.alpha = ref2 > 0 ? dot / ref2 : (got2 == 0 ? 1.0 : 0.0);
  double res2 = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = got[i] - c.alpha * ref[i];
    res2 += d * d;
  }
  const double scaled2 = c.alpha * c.alpha * ref2;
  c.residual = scaled2 > 0 ? std::sqrt(res2 / scaled2) : (res2 > 0 ? INFINITY : 0.0);
  c.pass = finite && c.rel_err <= tol;
  if (!finite) {
    c.diagnosis = name + " contains NaN or Inf";
  } else if (c.pass) {
    c.diagnosis = ref_is_zero ? "matches (the reference is zero up to rounding)" : "matches";
  } else if (ref_is_zero) {
    c.diagnosis =
        name + " should be zero (as the reference, up to rounding) but has norm " + general(std::sqrt(got2));
  } else if (got2 == 0) {
    c.diagnosis = name + " is all zeros";
  } else if (c.residual <= tol) {
    c.diagnosis = name + " is " + describe_scale(c.alpha, sizes, tol);
  } else {
    c.diagnosis = name + " differs, not by a uniform scale (best-fit α = " + general(c.alpha) +
                  ", residual " + general(c.residual) + ")";
  }
  return c;
}

}  // namespace spsim::analysis
