// The comparison statistics and the diagnosis they lead to.
#include "analysis/check/comparison.hpp"

#include <doctest/doctest.h>

#include <cmath>

using spsim::analysis::compare_tensors;

TEST_CASE("compare: identical tensors pass with zero error and alpha 1") {
  const std::vector<double> r = {1, -2, 3, 0.5};
  const auto c = compare_tensors(r, r, 1e-10, 4, "dW");
  CHECK(c.pass);
  CHECK(c.rel_err == 0.0);
  CHECK(c.alpha == 1.0);
  CHECK(c.diagnosis == "matches");
}

TEST_CASE("compare: a uniform 1/P scale is named with its fraction") {
  // g = r / 4: ‖g − r‖/‖r‖ = 3/4, α = ⟨r/4, r⟩/⟨r, r⟩ = 1/4, residual 0.
  const std::vector<double> r = {1, -2, 3, 0.5};
  std::vector<double> g;
  for (double x : r) g.push_back(x / 4);
  const auto c = compare_tensors(g, r, 1e-10, 4, "dWq");
  CHECK_FALSE(c.pass);
  CHECK(c.rel_err == doctest::Approx(0.75));
  CHECK(c.alpha == doctest::Approx(0.25));
  CHECK(c.residual <= 1e-15);
  CHECK(c.diagnosis == "dWq is 0.2500 × reference (= 1/4 = 1/world_size)");
}

TEST_CASE("compare: world_size multiple and other fractions") {
  const std::vector<double> r = {1, 2};
  CHECK(compare_tensors(std::vector<double>{8, 16}, r, 1e-10, 8, "g").diagnosis ==
        "g is 8.0000 × reference (= 8 = world_size)");
  CHECK(compare_tensors(std::vector<double>{1.5, 3}, r, 1e-10, 8, "g").diagnosis ==
        "g is 1.5000 × reference (= 3/2)");
}

TEST_CASE("compare: a non-uniform difference is reported as such") {
  // g − r = (0, 1): α = ⟨g, r⟩/⟨r, r⟩ = (1·1 + 3·2)/5 = 7/5; g − α r = (−0.4, 0.2) ≠ 0.
  const std::vector<double> r = {1, 2}, g = {1, 3};
  const auto c = compare_tensors(g, r, 1e-10, 2, "dX");
  CHECK_FALSE(c.pass);
  CHECK(c.alpha == doctest::Approx(1.4));
  CHECK(c.residual == doctest::Approx(std::sqrt(0.2) / (1.4 * std::sqrt(5.0))));
  CHECK(c.diagnosis.find("dX differs, not by a uniform scale") == 0);
}

TEST_CASE("compare: zeros and NaN") {
  const std::vector<double> r = {1, 2};
  CHECK(compare_tensors(std::vector<double>{0, 0}, r, 1e-10, 2, "g").diagnosis == "g is all zeros");
  const auto c = compare_tensors(std::vector<double>{NAN, 0}, r, 1e-10, 2, "g");
  CHECK_FALSE(c.pass);
  CHECK(c.diagnosis == "g contains NaN or Inf");
}

TEST_CASE("compare: a zero gradient is judged against the problem's norm floor") {
  // The reference is rounding noise (1e-17) and the strategy's noise differs: with floor 1e-3 the
  // error 2e-17 / 1e-3 = 2e-14 is within tolerance.
  const std::vector<double> r = {1e-17, -1e-17}, g = {-1e-17, 1e-17};
  const auto c = compare_tensors(g, r, 1e-10, 4, "dbk", 1e-3);
  CHECK(c.pass);
  CHECK(c.diagnosis == "matches (the reference is zero up to rounding)");
  const auto bad = compare_tensors(std::vector<double>{0.5, 0}, r, 1e-10, 4, "dbk", 1e-3);
  CHECK_FALSE(bad.pass);
  CHECK(bad.diagnosis.find("dbk should be zero") == 0);
}
