// fit_line: the relative least-squares α-β fit recovers known parameters from the closed form.
#include "analysis/calibrate/fit.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/core/error.hpp"

using spsim::analysis::fit_line;

TEST_CASE("fit_line recovers alpha and beta from t = alpha + beta x exactly") {
  // (α, β) pairs spanning a shared-memory link (1 µs, 5 GB/s) to a network (20 µs, 25 GB/s), sizes
  // 8 B .. 1 GiB in ×4 steps: the data are the closed form itself, so the fit must reproduce it.
  const double cases[][2] = {{1e-6, 1 / 5e9}, {20e-6, 1 / 25e9}, {0.0, 1 / 1e9}, {3e-6, 0.0}};
  for (const auto& c : cases) {
    const double alpha = c[0], beta = c[1];
    CAPTURE(alpha);
    CAPTURE(beta);
    std::vector<double> x, t;
    for (double n = 8; n <= 1 << 30; n *= 4) x.push_back(n), t.push_back(alpha + beta * n);
    const auto f = fit_line(x, t, "test");
    CHECK(f.alpha == doctest::Approx(alpha).epsilon(1e-9).scale(1e-12));
    CHECK(f.beta == doctest::Approx(beta).epsilon(1e-9).scale(1e-18));
    CHECK(f.residual < 1e-9);
    CHECK(f.points == static_cast<int>(x.size()));
  }
}

TEST_CASE("absolute weighting lets the largest points decide") {
  // Three points, the two small ones on t = x / 100 and the large one at half that rate: with absolute
  // weights the large one dominates. Normal equations (S = 3, Sx = 1e3 + 2e3 + 1e6, Sxx, St, Sxt)
  // solved here independently of the code under test.
  const std::vector<double> x{1e3, 2e3, 1e6}, t{10, 20, 20000};
  const double S = 3, Sx = 1e3 + 2e3 + 1e6, Sxx = 1e6 + 4e6 + 1e12, St = 10 + 20 + 20000,
               Sxt = 1e4 + 4e4 + 2e10;
  const double beta = (S * Sxt - Sx * St) / (S * Sxx - Sx * Sx), alpha = (St - beta * Sx) / S;
  REQUIRE(alpha < 0);  // the unconstrained optimum; the fit pins α at 0 and refits β = Sxt / Sxx
  const auto f = fit_line(x, t, "test", spsim::analysis::Weighting::absolute);
  CHECK(f.alpha == 0);
  CHECK(f.beta == doctest::Approx(Sxt / Sxx));
  CHECK(f.beta == doctest::Approx(0.02).epsilon(1e-4));  // the large point's rate
  CHECK(fit_line(x, t, "test").beta < 0.015);            // relative weighting: the small points pull it down
}

TEST_CASE("fit_rate: t = x / R through the origin, the large operations deciding R") {
  // Exact data t = x / 50e9 (a 50 GFLOP/s GEMM): β = 1 / 50e9 whatever the sizes.
  const std::vector<double> x{1e6, 1e8, 2e9}, exact{1e6 / 50e9, 1e8 / 50e9, 2e9 / 50e9};
  CHECK(spsim::analysis::fit_rate(x, exact, "t").beta == doctest::Approx(1 / 50e9));
  CHECK(spsim::analysis::fit_rate(x, exact, "t").alpha == 0);
  // The largest operation at half the rate: β = Σ x t / Σ x² (computed here), close to the large one's.
  const std::vector<double> t{1e6 / 50e9, 1e8 / 50e9, 2e9 / 25e9};
  double sxt = 0, sxx = 0;
  for (std::size_t i = 0; i < 3; ++i) sxt += x[i] * t[i], sxx += x[i] * x[i];
  const auto f = spsim::analysis::fit_rate(x, t, "t");
  CHECK(f.beta == doctest::Approx(sxt / sxx));
  CHECK(1 / f.beta == doctest::Approx(25e9).epsilon(0.01));
}

TEST_CASE("fit_line weighs every point by its relative error") {
  // Two points, two unknowns: the line passes through both whatever the weights, t = 1 + 2x.
  const std::vector<double> x{1, 3}, t{3, 7};
  const auto f = fit_line(x, t, "test");
  CHECK(f.alpha == doctest::Approx(1.0));
  CHECK(f.beta == doctest::Approx(2.0));
  // Three points off a line by +10% / -10% / +10% relative: the relative residual is what is reported.
  // With equal relative errors e on the residual rows the RMS is |e| when the fit is pinned: check the
  // residual is between 0 and 0.1 (the line can only reduce it) and the fit stays near the truth.
  const std::vector<double> x3{1e3, 1e6, 1e9},
      t3{1.1 * (1e-6 + 1e3 * 1e-9), 0.9 * (1e-6 + 1e6 * 1e-9), 1.1 * (1e-6 + 1e9 * 1e-9)};
  const auto g = fit_line(x3, t3, "test");
  CHECK(g.residual > 0);
  CHECK(g.residual <= 0.1 + 1e-12);
  CHECK(g.beta == doctest::Approx(1e-9).epsilon(0.15));
}

TEST_CASE("fit_line keeps both parameters non-negative") {
  // Times that shrink with size have no physical bandwidth: β is pinned at 0 and α is the weighted
  // mean of the times, Σ(1/t) / Σ(1/t²) (the relative least-squares constant).
  const std::vector<double> x{1, 2, 3}, t{3, 2, 1};
  const auto f = fit_line(x, t, "test");
  CHECK(f.beta == 0);
  const double s1 = 1 / 3.0 + 1 / 2.0 + 1.0, s2 = 1 / 9.0 + 1 / 4.0 + 1.0;
  CHECK(f.alpha == doctest::Approx(s1 / s2));
  // A line through the origin with a negative intercept fitted unconstrained: t = 2x − 1 at x = 1, 2, 3
  // gives α < 0, so α is pinned at 0 and β = Σ(x/t) / Σ(x²/t²).
  const std::vector<double> t2{1, 3, 5};
  const auto g = fit_line(x, t2, "test");
  CHECK(g.alpha == 0);
  const double sxt = 1 / 1.0 + 2 / 3.0 + 3 / 5.0, sxx = 1 / 1.0 + 4 / 9.0 + 9 / 25.0;
  CHECK(g.beta == doctest::Approx(sxt / sxx));
}

TEST_CASE("fit_line_robust drops a point hit by another process and recovers the line") {
  // t = 2 µs + n / 4 GB/s, with the 64 KiB point 3× slower (a preempted measurement).
  std::vector<double> x, t;
  for (double n = 16; n <= 1 << 24; n *= 4) x.push_back(n), t.push_back(2e-6 + n / 4e9);
  t[6] *= 3;
  const auto plain = fit_line(x, t, "test");
  CHECK(plain.residual > 0.1);  // the outlier spoils the plain fit
  const auto r = spsim::analysis::fit_line_robust(x, t, "test");
  CHECK(r.dropped == 1);
  CHECK(r.fit.alpha == doctest::Approx(2e-6).epsilon(1e-9));
  CHECK(r.fit.beta == doctest::Approx(1 / 4e9).epsilon(1e-9));
  CHECK(r.fit.points == static_cast<int>(x.size()) - 1);
  // Exact data: nothing is dropped.
  t[6] /= 3;
  CHECK(spsim::analysis::fit_line_robust(x, t, "test").dropped == 0);
}

TEST_CASE("fit_line rejects what it cannot fit") {
  const std::vector<double> one{1}, t1{1};
  CHECK_THROWS_AS((void)fit_line(one, t1, "w"), spsim::InputError);
  const std::vector<double> same{4, 4}, t2{1, 2};
  CHECK_THROWS_AS((void)fit_line(same, t2, "w"), spsim::InputError);
  const std::vector<double> x{1, 2}, zero{0, 1};
  CHECK_THROWS_AS((void)fit_line(x, zero, "w"), spsim::InputError);
}
