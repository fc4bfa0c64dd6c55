// Tests of max-min fair sharing (progressive filling), each expected rate derived by hand, plus a
// randomized check of the max-min optimality conditions.
#include "sim/network/max_min.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

using spsim::sim::max_min_rates;

TEST_CASE("two flows on one link get half each") {
  // One 10 GB/s link, two flows: 10 / 2 = 5 GB/s each.
  const auto r = max_min_rates({10e9}, {{0}, {0}});
  CHECK(r[0] == doctest::Approx(5e9));
  CHECK(r[1] == doctest::Approx(5e9));
}

TEST_CASE("flows with different bottlenecks get their max-min rates") {
  // Links A = 10, B = 4 (GB/s). Flow 0 crosses A and B, flow 1 only A, flow 2 only B.
  // Fair shares: A 10/2 = 5, B 4/2 = 2 -> B is the bottleneck: flows 0 and 2 get 2.
  // A has 10 - 2 = 8 left for flow 1 alone: 8.
  const auto r = max_min_rates({10e9, 4e9}, {{0, 1}, {0}, {1}});
  CHECK(r[0] == doctest::Approx(2e9));
  CHECK(r[1] == doctest::Approx(8e9));
  CHECK(r[2] == doctest::Approx(2e9));
}

TEST_CASE("a chain of bottlenecks") {
  // Link 0 (1 GB/s): flow 0. Link 1 (9 GB/s): flows 0, 1, 2. Link 2 (3 GB/s): flow 2, flow 3.
  // Shares: l0 1/1 = 1, l1 9/3 = 3, l2 3/2 = 1.5 -> l0 first: flow 0 = 1; l1 has 8 for 2 flows (4),
  // l2 still 1.5 -> l2: flows 2, 3 = 1.5; l1 has 8 - 1.5 = 6.5 for flow 1.
  const auto r = max_min_rates({1e9, 9e9, 3e9}, {{0, 1}, {1}, {1, 2}, {2}});
  CHECK(r[0] == doctest::Approx(1e9));
  CHECK(r[1] == doctest::Approx(6.5e9));
  CHECK(r[2] == doctest::Approx(1.5e9));
  CHECK(r[3] == doctest::Approx(1.5e9));
}

TEST_CASE("a flow crossing no link is unconstrained") {
  const auto r = max_min_rates({1e9}, {{}, {0}});
  CHECK(std::isinf(r[0]));
  CHECK(r[1] == doctest::Approx(1e9));
}

// Max-min fairness holds iff the allocation is feasible and every flow has a bottleneck link: one
// that is saturated and on which no flow has a larger rate (Bertsekas & Gallager, Prop. 6.5.1).
TEST_CASE("random instances satisfy the bottleneck characterisation") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const int n_links = 1 + static_cast<int>(rng() % 8), n_flows = 1 + static_cast<int>(rng() % 12);
    std::vector<double> cap(static_cast<std::size_t>(n_links));
    for (auto& c : cap) c = 1.0 + static_cast<double>(rng() % 100);
    std::vector<std::vector<int>> flows(static_cast<std::size_t>(n_flows));
    for (auto& f : flows) {
      for (int l = 0; l < n_links; ++l)
        if (rng() % 3 == 0) f.push_back(l);
      if (f.empty()) f.push_back(static_cast<int>(rng() % static_cast<unsigned>(n_links)));
    }
    const auto r = max_min_rates(cap, flows);
    std::vector<double> load(cap.size(), 0.0), top(cap.size(), 0.0);
    for (std::size_t f = 0; f < flows.size(); ++f)
      for (int l : flows[f]) {
        load[static_cast<std::size_t>(l)] += r[f];
        top[static_cast<std::size_t>(l)] = std::max(top[static_cast<std::size_t>(l)], r[f]);
      }
    for (std::size_t l = 0; l < cap.size(); ++l) CHECK(load[l] <= cap[l] * (1 + 1e-12));
    for (std::size_t f = 0; f < flows.size(); ++f) {
      bool has_bottleneck = false;
      for (int l : flows[f]) {
        const auto li = static_cast<std::size_t>(l);
        if (load[li] >= cap[li] * (1 - 1e-9) && r[f] >= top[li] * (1 - 1e-12)) has_bottleneck = true;
      }
      CHECK(has_bottleneck);
    }
  }
}
