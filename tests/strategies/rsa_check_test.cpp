// Gradient checks of Ring Self-Attention against the float64 reference, over world sizes, masks,
// GQA, batch > 1 and both scopes.
#include <doctest/doctest.h>

#include <set>

#include "analysis/check/check.hpp"

using namespace spsim;

namespace {

analysis::Config small_config(const std::string& reduction, int degree, bool causal, models::Scope scope) {
  analysis::Config c;
  c.name = "test";
  // GQA: 4 query heads share 2 kv heads; seq 24 divides by every degree tested (1, 2, 3, 4, 8).
  c.model.hidden = 32;
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.head_dim = 8;
  c.model.ffn_hidden = 48;
  c.workload.seq_len = 24;
  c.workload.batch = 2;
  c.workload.causal = causal;
  c.workload.scope = scope;
  c.strategy.name = "rsa";
  c.strategy.degree = degree;
  c.strategy.options = {{"grad_reduction", reduction}};
  c.check.dtype = rt::DType::f64;
  c.check.seed = 7;
  return c;
}

}  // namespace

TEST_CASE("rsa exact variants match the reference to 1e-12") {
  for (const char* reduction : {"allreduce_slice", "reduce_scatter", "ring"})
    for (int degree : {1, 2, 3, 4, 8})
      for (bool causal : {false, true})
        for (auto scope : {models::Scope::attention, models::Scope::layer}) {
          CAPTURE(reduction);
          CAPTURE(degree);
          CAPTURE(causal);
          CAPTURE(static_cast<int>(scope));
          const auto res = analysis::run_check(small_config(reduction, degree, causal, scope));
          CHECK(res.tensors.size() == (scope == models::Scope::layer ? 18u : 4u));
          for (const auto& t : res.tensors) {
            CAPTURE(t.name);
            CHECK(t.cmp.rel_err <= 1e-12);
            CHECK(t.cmp.pass);
          }
        }
}

// ColossalAI's RSA divides dQ and the all-reduced dK, dV by P. The all-reduce already produces the
// exact cross-rank sum, so dQ, dK, dV are exactly 1/P of the truth; every gradient that reaches the
// parameters only through them (Wq/bq, Wk/bk, Wv/bv, and LN1's gamma/beta, which feed only Q/K/V)
// is scaled by the same 1/P, while the layer output, Wo, the MLP and LN2 (upstream of the attention
// core in backward) are exact. dX = residual path (exact) + LN1 path (1/P): no uniform scale.
TEST_CASE("rsa allreduce_slice_div: Q/K/V-side gradients are exactly 1/P of the reference") {
  for (int degree : {2, 4, 8}) {
    CAPTURE(degree);
    const auto res =
        analysis::run_check(small_config("allreduce_slice_div", degree, false, models::Scope::layer));
    // dbk is zero in exact arithmetic (softmax ignores a shift of a score row), so it "matches".
    const std::set<std::string> scaled = {"dWq", "dbq", "dWk", "dWv", "dbv", "dLN1.gamma", "dLN1.beta"};
    CHECK_FALSE(res.pass());
    for (const auto& t : res.tensors) {
      CAPTURE(t.name);
      if (scaled.count(t.name)) {
        CHECK_FALSE(t.cmp.pass);
        CHECK(t.cmp.alpha == doctest::Approx(1.0 / degree).epsilon(1e-12));
        CHECK(t.cmp.residual <= 1e-10);
        CHECK(t.cmp.diagnosis.find("= 1/" + std::to_string(degree) + " = 1/world_size") != std::string::npos);
      } else if (t.name == "dX") {
        CHECK_FALSE(t.cmp.pass);
        CHECK(t.cmp.diagnosis.find("not by a uniform scale") != std::string::npos);
      } else {
        CHECK(t.cmp.pass);  // Y, dbk, dWo, dbo, dW1, db1, dW2, db2, dLN2.gamma, dLN2.beta
      }
    }
  }
}

TEST_CASE("rsa allreduce_slice_div at attention scope: dQ, dK, dV are 1/P, O is exact") {
  const int degree = 4;
  const auto res =
      analysis::run_check(small_config("allreduce_slice_div", degree, true, models::Scope::attention));
  for (const auto& t : res.tensors) {
    CAPTURE(t.name);
    if (t.name == "O") {
      CHECK(t.cmp.pass);
    } else {
      CHECK(t.cmp.alpha == doctest::Approx(0.25).epsilon(1e-12));
      CHECK(t.cmp.residual <= 1e-10);
    }
  }
}

TEST_CASE("rsa float32 check passes within the float32 tolerance") {
  auto cfg = small_config("ring", 4, true, models::Scope::layer);
  cfg.check.dtype = rt::DType::f32;
  const auto res = analysis::run_check(cfg);
  CHECK(res.tolerance == doctest::Approx(1e-4));
  for (const auto& t : res.tensors) {
    CAPTURE(t.name);
    CHECK(t.cmp.pass);
  }
}
