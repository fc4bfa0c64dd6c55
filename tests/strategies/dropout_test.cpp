// Dropout in the layer strategies, run for real on CPU ranks (threads): the masks are applied alike in
// forward and backward (the gradient against central finite differences of the same function), a
// recomputed forward draws the masks of the first, the TP group draws alike where it holds the residual
// stream alike, and dropout changes the result at all. check refuses dropout (no layout reproduces the
// reference's masks), so these compare the strategies with themselves.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/check/check.hpp"
#include "analysis/config/config.hpp"
#include "models/random.hpp"
#include "runtime/core/hash.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/threads/threads_comm.hpp"
#include "strategies/layer_strategy.hpp"
#include "strategies/step.hpp"
#include "tests/strategies/check_config.hpp"

using namespace spsim;

namespace {

// megatron_sp (tp 2) over rsa (cp 2) at layer scope, or the replicated layer (tp 1); seq 48, 8 heads of
// 4, batch 2 (the strategies' shared check config), not causal.
analysis::Config layer_config(int tp, bool sp, double attention, double hidden) {
  analysis::Config c = strategies_test::config("rsa", {{"grad_reduction", "reduce_scatter"}}, 2, false, true,
                                               models::Scope::layer);
  c.parallel.tp = tp;
  const std::string name = tp > 1 ? "megatron_sp" : "replicated";
  c.layer.name = name;
  c.layer.entry = strategies::find_layer_strategy(name);
  c.layer.options = strategies::complete_layer_options(
      *c.layer.entry,
      tp > 1 ? strategies::Options{{"sequence_parallel", sp ? "true" : "false"}} : strategies::Options{},
      "layer.options");
  c.model.attention_dropout = attention;
  c.model.hidden_dropout = hidden;
  return c;
}

struct RankResult {
  std::vector<double> y, dx;    // the rank's output rows and input gradient (dx empty without backward)
  std::vector<double> dy, dir;  // its upstream gradient and the direction x moves in
};

// A value in [-1, 1) for element (a, token, c) of input `which`: by global token position, so ranks
// holding the same tokens (a TP group without sequence parallelism) hold the same values.
double value_at(std::uint64_t which, std::int64_t a, std::int64_t token, std::int64_t c) {
  const std::uint64_t h = rt::WordHash()
                              .add(which)
                              .add(static_cast<std::uint64_t>(a))
                              .add(static_cast<std::uint64_t>(token))
                              .add(static_cast<std::uint64_t>(c))
                              .value();
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1;
}

std::vector<double> by_position(std::uint64_t which, const rt::Shape& shape, const std::vector<std::int64_t>& pos) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(rt::numel(shape)));
  for (std::int64_t a = 0; a < shape[0]; ++a)
    for (std::int64_t i = 0; i < shape[1]; ++i)
      for (std::int64_t c = 0; c < shape[2]; ++c) v.push_back(value_at(which, a, pos[static_cast<std::size_t>(i)], c));
  return v;
}

// Every rank's result for input x + eps · dir, with or without the backward, with or without
// recomputation.
std::vector<RankResult> run(const analysis::Config& cfg, double eps, bool backward, bool recompute = false) {
  strategies::StepConfig step = analysis::check_step_config(cfg);
  step.workload.recompute = recompute;
  step.workload.passes = backward ? models::Passes::fwd_bwd : models::Passes::fwd;
  const int world = cfg.parallel.tp * cfg.strategy.degree;
  std::vector<RankResult> out(static_cast<std::size_t>(world));
  rt::run_ranks(world, [&](rt::Comm& comm) {
    rt::CpuDevice dev(rt::DType::f64);
    auto& mine = out[static_cast<std::size_t>(comm.rank())];
    const strategies::StepData data{
        [&](strategies::StepInput which, const rt::Shape& shape, const rt::Positions& runs) {
          const std::vector<std::int64_t> pos = runs.expand();
          auto v = by_position(static_cast<std::uint64_t>(which), shape, pos);
          if (which == strategies::StepInput::x) {
            mine.dir = by_position(99, shape, pos);
            for (std::size_t i = 0; i < v.size(); ++i) v[i] += eps * mine.dir[i];
          }
          if (which == strategies::StepInput::d_y) mine.dy = v;
          return dev.from_host(v, shape);
        },
        [&](int layer, const strategies::ParamShard& s) { return strategies_test::seeded_weight(dev, layer, s, 0.3); },
        [&](std::int64_t elements) { return dev.empty({elements}); }};
    strategies::Step s(step, cfg.strategy.info(), dev, comm, data);
    s.forward();
    if (backward) s.backward();
    mine.y = dev.to_host(s.outputs().at(0));
    if (backward) mine.dx = dev.to_host(s.outputs().at(1));
  });
  return out;
}

// Σ over ranks of <y, dy>: the function whose input gradient the backward computes (a TP group without
// sequence parallelism counts its rows once per rank, in f and in Σ <dx, dir> alike).
double loss(const std::vector<RankResult>& res, const std::vector<RankResult>& dys) {
  double f = 0;
  for (std::size_t r = 0; r < res.size(); ++r)
    for (std::size_t i = 0; i < res[r].y.size(); ++i) f += res[r].y[i] * dys[r].dy[i];
  return f;
}

}  // namespace

TEST_CASE("dropout: the input gradient is the directional derivative of the same masked function") {
  // The masks depend on the rank, the layer and the round, which only a finished backward advances:
  // forwards of fresh steps draw the masks the step with the backward draws. Central differences of
  // f(x + eps·dir) (f64, eps 1e-5: error O(eps²)) against Σ <dx, dir>.
  for (int tp : {1, 2})
    for (bool sp : {true, false}) {
      if (tp == 1 && !sp) continue;
      CAPTURE(tp);
      CAPTURE(sp);
      const analysis::Config cfg = layer_config(tp, sp, 0.25, 0.25);
      const auto base = run(cfg, 0, true);
      double directional = 0;
      for (const auto& r : base)
        for (std::size_t i = 0; i < r.dir.size(); ++i) directional += r.dx[i] * r.dir[i];
      const double eps = 1e-5;
      const double fd = (loss(run(cfg, eps, false), base) - loss(run(cfg, -eps, false), base)) / (2 * eps);
      CHECK(std::abs(fd - directional) <= 1e-6 * std::abs(directional));
      // With dropout off the function differs: the masks are applied at all.
      const auto plain = run(layer_config(tp, sp, 0, 0), 0, false);
      CHECK(loss(plain, base) != doctest::Approx(loss(base, base)).epsilon(1e-6));
    }
}

TEST_CASE("dropout: a recomputed forward draws the first forward's masks") {
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const analysis::Config cfg = layer_config(tp, true, 0.25, 0.25);
    const auto plain = run(cfg, 0, true, false), again = run(cfg, 0, true, true);
    for (std::size_t r = 0; r < plain.size(); ++r) {
      CAPTURE(r);
      CHECK(plain[r].y == again[r].y);
      CHECK(plain[r].dx == again[r].dx);
    }
  }
}

TEST_CASE("dropout: without sequence parallelism the TP group's residual streams stay equal") {
  // TP ranks 0 and 1 of a CP rank hold the same tokens, and the replicated residual stream: they draw
  // the hidden masks alike. Their attention heads differ, and so do those masks; with sequence
  // parallelism each rank holds its own rows.
  const auto res = run(layer_config(2, false, 0.25, 0.25), 0, false);
  REQUIRE(res.size() == 4u);
  CHECK(res[0].y == res[1].y);  // world ranks 0, 1: CP rank 0, TP ranks 0 and 1
  CHECK(res[2].y == res[3].y);
  CHECK(res[0].y != res[2].y);
}
