// Helpers shared by the CPU device tests: random inputs, tolerances, comparison, finite differences.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "runtime/cpu/cpu_device.hpp"

namespace spsim::rt::cpu_test {

using Values = std::vector<double>;

// Error allowed against a float64 reference, relative to the reference's magnitude: a few ulps of
// accumulated rounding for float64, a few float32 ulps (2^-23 ≈ 1.2e-7) times the short sums in these
// tests for float32.
template <class T>
constexpr double tolerance() {
  return sizeof(T) == 8 ? 1e-12 : 2e-5;
}
// Analytic gradient against a central finite difference of a float64 reference with step 1e-5: the
// difference itself is accurate to ~h² ≈ 1e-10; float32 kernels add their own rounding.
template <class T>
constexpr double fd_tolerance() {
  return sizeof(T) == 8 ? 1e-8 : 2e-4;
}

inline Values random_values(std::size_t n, std::uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Values v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline std::size_t count(const Shape& s) {
  return static_cast<std::size_t>(numel(s));
}

inline Tensor random_tensor(Device& dev, const Shape& shape, std::uint32_t seed) {
  return dev.from_host(random_values(count(shape), seed), shape);
}

// max |got − want| <= tol · max(1, max |want|); equal infinities compare equal.
inline void check_close(const Values& got, const Values& want, double tol) {
  REQUIRE(got.size() == want.size());
  double scale = 1.0, worst = 0.0;
  std::size_t worst_at = 0;
  for (double w : want)
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = (got[i] == want[i]) ? 0.0 : std::abs(got[i] - want[i]);  // handles ±inf == ±inf
    if (!(d <= worst)) {                                                      // also catches NaN
      worst = std::isnan(d) ? INFINITY : d;
      worst_at = i;
    }
  }
  CAPTURE(worst_at);
  CAPTURE(got[worst_at]);
  CAPTURE(want[worst_at]);
  CHECK(worst <= tol * scale);
}

// Central finite differences of a scalar function at x: g_i = (f(x + h e_i) − f(x − h e_i)) / 2h.
inline Values finite_difference(const std::function<double(const Values&)>& f, Values x, double h = 1e-5) {
  Values g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = f(x);
    x[i] = saved - h;
    const double down = f(x);
    x[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

inline double dot(const Values& a, const Values& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace spsim::rt::cpu_test
