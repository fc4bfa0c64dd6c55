// The small check configs the strategy suites share: seq 48, 8 heads (6 at P = 3), GQA optional; and
// the check that a config passes exactly.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "analysis/check/check.hpp"
#include "analysis/config/config.hpp"
#include "models/random.hpp"
#include "runtime/device.hpp"
#include "strategies/layer_strategy.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies_test {

// seq 48 divides by P and by 2P for every P tested (48 = 2·3·8). Heads: 8 (6 for P = 3, so that
// Ulysses can split them); GQA shares each kv head between 4 (or 2 for P = 3) query heads.
inline analysis::Config config(const std::string& strategy, strategies::Options options, int degree,
                               bool causal, bool gqa, models::Scope scope) {
  analysis::Config c;
  c.name = "test";
  c.model.heads = degree == 3 ? 6 : 8;
  c.model.kv_heads = gqa ? (degree == 3 ? 3 : 2) : c.model.heads;
  c.model.head_dim = 4;
  c.model.hidden = c.model.heads * c.model.head_dim;
  c.model.ffn_hidden = 40;
  c.workload.seq_len = 48;
  c.workload.batch = 2;
  c.workload.causal = causal;
  c.workload.scope = scope;
  c.strategy.name = strategy;
  c.strategy.degree = degree;
  const auto& info = *strategies::builtin().find(strategy);
  c.strategy.options = strategies::builtin().complete_options(info, options, "strategy.options");
  c.check.dtype = rt::DType::f64;
  c.check.seed = 11;
  return c;
}

// The strategy accepts the config, and every tensor matches the float64 reference to 1e-12.
inline void expect_exact(const analysis::Config& cfg) {
  const auto& info = *strategies::builtin().find(cfg.strategy.name);
  const auto why = info.check(models::attention_problem(cfg.model, cfg.workload), cfg.strategy.degree,
                              cfg.strategy.options);
  REQUIRE_MESSAGE(!why.has_value(), why.value_or(""));
  const auto res = analysis::run_check(cfg);
  CHECK(res.tensors.size() == (cfg.workload.scope == models::Scope::layer ? 18u : 4u));
  for (const auto& t : res.tensors) {
    CAPTURE(t.name);
    CHECK(t.cmp.rel_err <= 1e-12);
    CHECK(t.cmp.pass);
  }
}

// A weight shard of layer `layer` for suites that build strategies::Step themselves: normal values of
// standard deviation `stddev`, seeded by the layer and the shard (its name length and start).
inline rt::Tensor seeded_weight(rt::Device& dev, int layer, const strategies::ParamShard& s, double stddev) {
  return dev.from_host(models::random_vector(rt::numel(s.local()),
                                             1000 * static_cast<std::uint64_t>(layer) + s.name.size() +
                                                 static_cast<std::uint64_t>(s.start),
                                             stddev),
                       s.local());
}

}  // namespace spsim::strategies_test
