// Host-only checks of the loop references the GPU tests compare against (suite "host", run even when
// there is no GPU): closed-form products, softmax normalisation, and the attention backward formulas
// against central finite differences of the attention forward.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

TEST_SUITE("host") {
  TEST_CASE("gemm_ref: textbook 2x2 products, transposes and the summed GQA output") {
    // [[1,2],[3,4]] [[5,6],[7,8]] = [[19,22],[43,50]]; with a transposed: [[26,30],[38,44]].
    const Vec a{1, 2, 3, 4}, b{5, 6, 7, 8}, zero(4, 0.0);
    check_close(gemm_ref({1, 2, 2, 1, 2, 2, 1, false, false}, a, b, zero, 1, 0), {19, 22, 43, 50}, 0);
    check_close(gemm_ref({1, 2, 2, 1, 2, 2, 1, true, false}, a, b, zero, 1, 0), {26, 30, 38, 44}, 0);
    // alpha = 2, beta = 1 on c = 1: 2 × product + 1.
    check_close(gemm_ref({1, 2, 2, 1, 2, 2, 1, false, false}, a, b, Vec(4, 1.0), 2, 1), {39, 45, 87, 101}, 0);
    // Two batches summed into one output: (a b) + (b a) = [[19,22],[43,50]] + [[23,34],[31,46]].
    Vec ab2 = a, ba2 = b;
    ab2.insert(ab2.end(), b.begin(), b.end());
    ba2.insert(ba2.end(), a.begin(), a.end());
    check_close(gemm_ref({2, 2, 2, 2, 2, 2, 1, false, false}, ab2, ba2, zero, 1, 0), {42, 56, 74, 96}, 0);
  }

  TEST_CASE("softmax_ref: allowed entries sum to 1, masked ones are 0, lse is log-sum-exp") {
    const MaskRef m{true, {0, 5, 2, 9}, {3, 4, 1, 8, 6}};
    const Vec x = random_vec(20, 3, -2, 2);
    Vec y, lse;
    softmax_ref(x, 1, 4, 5, 0.5, m, y, &lse);
    for (I64 r = 0; r < 4; ++r) {
      double sum = 0, sum_exp = 0;
      for (I64 c = 0; c < 5; ++c) {
        const double p = y[static_cast<std::size_t>(r * 5 + c)];
        if (!m.allowed(r, c)) CHECK(p == 0.0);
        sum += p;
        if (m.allowed(r, c)) sum_exp += std::exp(0.5 * x[static_cast<std::size_t>(r * 5 + c)]);
      }
      CAPTURE(r);
      CHECK(sum == doctest::Approx(r == 0 ? 0.0 : 1.0));  // row 0 (position 0) sees no key
      if (r == 0)
        CHECK(std::isinf(lse[0]));
      else
        CHECK(lse[static_cast<std::size_t>(r)] == doctest::Approx(std::log(sum_exp)));
    }
  }

  TEST_CASE("attention_backward_ref equals finite differences of sum(do * attention_forward_ref)") {
    // GQA (3 query heads per kv head) under a causal mask with a fully masked row. Central
    // differences with h = 1e-6 have O(h^2) truncation and ~1e-10 rounding error: 1e-6 is ample.
    const AttnCase a{3, 1, 4, 5, 3, 0.6, MaskRef{true, {0, 5, 2, 9}, {3, 4, 1, 8, 6}}};
    Vec q = random_vec(static_cast<std::size_t>(a.bq * a.sq * a.d), 1);
    Vec k = random_vec(static_cast<std::size_t>(a.bk * a.sk * a.d), 2);
    Vec v = random_vec(static_cast<std::size_t>(a.bk * a.sk * a.d), 3);
    const Vec d_o = random_vec(q.size(), 4);
    const auto loss = [&] {
      Vec o, lse;
      attention_forward_ref(a, q, k, v, o, lse);
      double s = 0;
      for (std::size_t i = 0; i < o.size(); ++i) s += d_o[i] * o[i];
      return s;
    };
    const auto numeric = [&](Vec& x) {
      Vec g(x.size());
      const double h = 1e-6;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss();
        x[i] = keep - h;
        const double down = loss();
        x[i] = keep;
        g[i] = (up - down) / (2 * h);
      }
      return g;
    };
    Vec o, lse;
    attention_forward_ref(a, q, k, v, o, lse);
    Vec dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
    attention_backward_ref(a, q, k, v, o, d_o, lse, dq, dk, dv);
    check_close(dq, numeric(q), 1e-6);
    check_close(dk, numeric(k), 1e-6);
    check_close(dv, numeric(v), 1e-6);
  }
}

}  // namespace
}  // namespace spsim::gpu_test
