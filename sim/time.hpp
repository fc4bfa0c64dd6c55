// Time: the simulator's clock, an integer count of picoseconds (exact, deterministic arithmetic).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <string>

#include "runtime/core/error.hpp"

namespace spsim::sim {

// Integer picoseconds: sums of durations are exact and independent of evaluation order, which keeps
// runs byte-identical. int64 picoseconds cover 106 days of simulated time.
class Time {
 public:
  constexpr Time() = default;
  [[nodiscard]] static constexpr Time ps(std::int64_t picoseconds) { return Time(picoseconds); }
  [[nodiscard]] static constexpr Time ns(std::int64_t nanoseconds) { return Time(nanoseconds * 1000); }
  // Conversions from real numbers round to the nearest picosecond (the only place rounding happens).
  // A duration past kMaxSeconds (11.6 days, far below the clock's 106 days) is an InputError: a step that
  // long means a workload too large to simulate, and summing such durations would overflow the clock.
  static constexpr double kMaxSeconds = 1e6;
  [[nodiscard]] static Time from_seconds(double seconds) {
    if (!(std::abs(seconds) <= kMaxSeconds)) too_long(seconds);
    return Time(std::llround(seconds * 1e12));
  }
  [[nodiscard]] static Time from_us(double microseconds) {
    if (!(std::abs(microseconds) <= kMaxSeconds * 1e6)) too_long(microseconds * 1e-6);
    return Time(std::llround(microseconds * 1e6));
  }
  [[nodiscard]] static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  [[nodiscard]] constexpr std::int64_t count_ps() const { return ps_; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  [[nodiscard]] constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  [[nodiscard]] friend constexpr Time operator+(Time a, Time b) { return Time(a.ps_ + b.ps_); }
  [[nodiscard]] friend constexpr Time operator-(Time a, Time b) { return Time(a.ps_ - b.ps_); }
  [[nodiscard]] friend constexpr Time operator*(std::int64_t k, Time a) { return Time(k * a.ps_); }
  [[nodiscard]] friend constexpr auto operator<=>(Time a, Time b) = default;

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  [[noreturn]] static void too_long(double seconds) {
    throw InputError("workload",
                     "a simulated operation would take " + std::to_string(seconds) +
                         " s, beyond the simulator's clock (durations up to 1e6 s); the workload is "
                         "too large to simulate as one step");
  }
  std::int64_t ps_ = 0;
};

}  // namespace spsim::sim
