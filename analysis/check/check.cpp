// The gradient check: inputs, reference, the strategy on tp × P thread ranks, and the comparison.
#include "analysis/check/check.hpp"

#include <cmath>
#include <cstdio>
#include <future>
#include <limits>
#include <mutex>
#include <utility>

#include "analysis/check/check_data.hpp"
#include "analysis/check/memory_estimate.hpp"
#include "analysis/check/npy.hpp"
#include "analysis/closed_form/closed_form.hpp"
#include "analysis/report/table.hpp"
#include "models/layer_params.hpp"
#include "runtime/core/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/threads/threads_comm.hpp"
#include "strategies/layer.hpp"
#include "strategies/step.hpp"

namespace spsim::analysis {

namespace {

using Vec = HostVec;

struct Outcome {
  std::vector<Array> inputs;     // for --dump
  std::vector<Array> reference;  // what the strategy's results are compared against, in order
  std::vector<Array> strategy;
};

struct RankSetup {
  const Config& cfg;
  const strategies::StrategyInfo& info;
  models::AttnProblem problem;
  strategies::StepConfig step;  // one TP × SP group, forward and backward, one bucket per reduction group
};

Outcome check_attention(const RankSetup& s) {
  const auto& p = s.problem;
  const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, S = p.seq_len, d = p.head_dim;
  const AttentionInputs in = attention_inputs(p, s.cfg.check.seed);

  // The reference depends only on the inputs, so it runs while the ranks do: the ranks wait on each
  // other at every collective, and the reference's threads fill those gaps on otherwise idle cores.
  // Its threads split the work the same way whatever else runs, so its numbers do not change.
  auto reference = std::async(std::launch::async, [&] { return attention_reference_arrays(p, in); });
  const int P = s.cfg.strategy.degree;
  Vec o(in.q.size()), dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
  std::mutex mu;
  rt::run_ranks(P, [&](rt::Comm& comm) {
    rt::CpuDevice dev(s.cfg.check.dtype);
    const strategies::StepData data{
        [&](strategies::StepInput which, const rt::Shape& shape, const rt::Positions& pos) {
          const Vec& global = which == strategies::StepInput::q   ? in.q
                              : which == strategies::StepInput::k ? in.k
                              : which == strategies::StepInput::v ? in.v
                                                                  : in.r;
          return dev.from_host(gather_rows(global, shape[0], S, d, pos.expand()), shape);
        },
        nullptr, nullptr};
    strategies::Step step(s.step, s.info, dev, comm, data);
    step.forward();
    step.backward();
    const auto& out = step.outputs();
    const Vec ho = dev.to_host(out[0]), hq = dev.to_host(out[1]), hk = dev.to_host(out[2]),
              hv = dev.to_host(out[3]);
    const auto pos = step.positions().expand();
    std::lock_guard lock(mu);
    scatter_rows(ho, o, bh, S, d, pos);
    scatter_rows(hq, dq, bh, S, d, pos);
    scatter_rows(hk, dk, bkv, S, d, pos);
    scatter_rows(hv, dv, bkv, S, d, pos);
  });
  const rt::Shape qs{bh, S, d}, ks{bkv, S, d};
  Outcome out;
  out.inputs = {{"q", qs, in.q}, {"k", ks, in.k}, {"v", ks, in.v}, {"dO", qs, in.r}};
  out.reference = reference.get();
  out.strategy = {{"O", qs, o}, {"dQ", qs, dq}, {"dK", ks, dk}, {"dV", ks, dv}};
  return out;
}

Outcome check_layer(const RankSetup& s) {
  const auto& m = s.cfg.model;
  const auto& p = s.problem;
  const std::int64_t B = p.batch, S = p.seq_len, h = m.hidden;
  const LayerInputs in = layer_inputs(m, B, S, s.cfg.check.seed);

  auto reference =
      std::async(std::launch::async, [&] { return layer_reference_arrays(m, p, in); });  // as above
  const int tp = s.step.tp, world = tp * s.step.degree;
  const bool seq_first = strategies::step_sequence_first(s.step);
  const auto shapes = strategies::layer_param_shapes(m);
  Vec y(in.x.size()), dx(in.x.size());
  std::vector<Vec> dw;  // whole gradients, assembled from the shards of the first CP rank's TP ranks
  for (const auto& ps : shapes) dw.emplace_back(static_cast<std::size_t>(rt::numel(ps.shape)));
  std::mutex mu;
  rt::run_ranks(world, [&](rt::Comm& comm) {
    rt::CpuDevice dev(s.cfg.check.dtype);
    const strategies::StepData data{
        [&](strategies::StepInput which, const rt::Shape& shape, const rt::Positions& pos) {
          return dev.from_host(
              gather_rows(which == strategies::StepInput::x ? in.x : in.r, B, S, h, pos.expand(), seq_first),
              shape);
        },
        [&](int, const strategies::ParamShard& shard) {
          return dev.from_host(shard.take(in.params.at(shard.name).data), shard.local());
        },
        nullptr};
    strategies::Step step(s.step, s.info, dev, comm, data);
    step.forward();
    step.backward();
    const Vec hy = dev.to_host(step.outputs()[0]), hdx = dev.to_host(step.outputs()[1]);
    // Every CP rank holds the same reduced gradients; the first one's TP ranks hold every shard.
    std::vector<Vec> hw;
    if (comm.rank() < tp)
      for (const auto& t : step.weight_grads().tensors) hw.push_back(dev.to_host(t));
    const auto pos = step.positions().expand();
    std::lock_guard lock(mu);
    scatter_rows(hy, y, B, S, h, pos, seq_first);
    scatter_rows(hdx, dx, B, S, h, pos, seq_first);
    for (std::size_t i = 0; i < hw.size(); ++i) step.param_shards()[i].put(hw[i], dw[i]);
  });
  const rt::Shape xs{B, S, h};
  Outcome out;
  out.inputs = {{"x", xs, in.x}, {"dY", xs, in.r}};
  for (const auto& ps : shapes) out.inputs.push_back({ps.name, ps.shape, in.params.at(ps.name).data});
  out.reference = reference.get();
  out.strategy = {{"Y", xs, y}, {"dX", xs, dx}};
  for (std::size_t i = 0; i < shapes.size(); ++i)
    out.strategy.push_back({gradient_name(shapes[i].name), shapes[i].shape, dw[i]});
  return out;
}

void dump(const Outcome& o, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--dump", "cannot create directory '" + dir.string() + "': " + ec.message());
  auto write = [&](const std::string& prefix, const Array& a) {
    write_npy(dir / (prefix + a.name + ".npy"), a.data, a.shape);
  };
  for (const auto& a : o.inputs) write("input.", a);
  for (const auto& a : o.reference) write("reference.", a);
  for (const auto& a : o.strategy) write("strategy.", a);
}

}  // namespace

// The step config of a check: the strategy on one TP × SP group (data parallelism would only multiply
// the summed weight gradients), forward and backward whatever workload.passes says, and every weight
// gradient summed in one bucket per reduction group at the end, so the numbers do not depend on
// parallel.bucket_mb.
strategies::StepConfig check_step_config(const Config& cfg) {
  strategies::StepConfig s = step_config(cfg);
  s.dp = 1;
  s.workload.passes = models::Passes::fwd_bwd;
  s.bucket_bytes = std::numeric_limits<std::uint64_t>::max();
  return s;
}

std::string gradient_name(const std::string& param) {
  if (param.rfind("ln", 0) == 0) {
    std::string s = "dLN" + param.substr(2);
    return s;
  }
  if (param.size() >= 2 && param[0] == 'w') return "dW" + param.substr(1);
  return "d" + param;
}

bool CheckResult::pass() const {
  for (const auto& t : tensors)
    if (!t.cmp.pass) return false;
  return true;
}

void require_no_dropout(const Config& cfg, const std::string& what) {
  // Hidden dropout acts in the layers only: at the attention scope it changes nothing.
  const double hidden = cfg.workload.scope == models::Scope::attention ? 0 : cfg.model.hidden_dropout;
  for (const auto& [key, p] : {std::pair{"attention_dropout", cfg.model.attention_dropout},
                               std::pair{"hidden_dropout", hidden}})
    if (p > 0)
      throw InputError(std::string("model.") + key,
                       what + " compares gradients with dropout off (a dropout mask is drawn per rank's tensor, "
                              "not per global element, so no layout reproduces the reference's): set it to 0");
}

CheckResult run_check(const Config& cfg, const CheckOptions& options) {
  if (!cfg.sweep.empty())
    throw InputError("sweep", "check runs one configuration; this config sweeps " +
                                  std::to_string(cfg.sweep.size()) +
                                  " axes (check each point's config, or use `spsim compare` for the sweep)");
  const auto& info = cfg.strategy.info();
  if (cfg.workload.scope == models::Scope::model)
    throw InputError("workload.scope", "'model' is not supported by check; valid choices: attention, layer");
  require_no_dropout(cfg, "check");
  const rt::MemoryLimit limit = rt::host_memory_limit(options.max_memory);
  require_host_memory(
      rt::in_stage("estimating the memory", [&] { return check_memory_estimate(cfg, limit); }), limit, cfg,
      "check");
  RankSetup setup{cfg, info, models::attention_problem(cfg.model, cfg.workload), check_step_config(cfg)};
  const Outcome o = rt::in_stage("checking the strategy against the float64 reference", [&] {
    return cfg.workload.scope == models::Scope::layer ? check_layer(setup) : check_attention(setup);
  });
  if (!options.dump_dir.empty()) dump(o, options.dump_dir);

  CheckResult res;
  res.config_name = cfg.name;
  res.strategy = cfg.strategy.name;
  res.options = cfg.strategy.options;
  res.degree = cfg.strategy.degree;
  if (cfg.workload.scope == models::Scope::layer) {
    res.layer = cfg.layer.name;
    res.layer_options = cfg.layer.options;
    res.tp = cfg.parallel.tp;
  }
  res.dtype = cfg.check.dtype;
  res.scope = cfg.workload.scope;
  if (cfg.workload.bounds.active()) res.mask = cfg.workload.bounds.describe(cfg.workload.causal);
  res.tolerance = tolerance_for(cfg.check.dtype);
  res.tensors = compare_arrays(o.reference, o.strategy, res.tolerance, GroupSizes(res.degree, res.tp));
  return res;
}

namespace {
std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}
}  // namespace

std::string render_check(const CheckResult& r) {
  Table t({{"tensor", Align::left},
           {"shape", Align::left},
           {"rel err", Align::right},
           {"max abs err", Align::right},
           {"best-fit α", Align::right},
           {"residual", Align::right},
           {"verdict", Align::left},
           {"diagnosis", Align::left}});
  int failed = 0;
  for (const auto& x : r.tensors) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%.6f", x.cmp.alpha);
    t.add_row({x.name, rt::to_string(x.shape), sci(x.cmp.rel_err), sci(x.cmp.max_abs_err), alpha,
               sci(x.cmp.residual), x.cmp.pass ? "pass" : "FAIL",
               x.cmp.diagnosis == "matches" ? "" : x.cmp.diagnosis});
    failed += x.cmp.pass ? 0 : 1;
  }
  const std::string layer =
      !layer_shown(r.layer, r.tp)
          ? ""
          : "layer " + r.layer + " (" + options_text(r.layer_options) + "), tp = " + std::to_string(r.tp) + ", ";
  std::string out = "spsim check: " + r.config_name + "\n" + layer + "strategy " + r.strategy + " (" +
                    options_text(r.options) + (layer.empty() ? "), P = " : "), cp = ") + std::to_string(r.degree) +
                    ", scope " +
                    (r.scope == models::Scope::layer ? "layer" : "attention") + ", " +
                    (r.mask.empty() ? std::string() : "mask " + r.mask + ", ") +
                    std::string(rt::dtype_name(r.dtype)) + ", tolerance " + sci(r.tolerance) + "\n\n";
  out += t.to_text();
  out += "\n";  // appended separately: GCC 12 -O3 warns (-Wrestrict, a false positive) on "\n" + string&&
  out += (failed == 0 ? std::string("PASS: all ") + std::to_string(r.tensors.size()) +
                            " tensors match the reference\n"
                      : std::string("FAIL: ") + std::to_string(failed) + " of " +
                            std::to_string(r.tensors.size()) + " tensors differ from the reference\n");
  return out;
}

}  // namespace spsim::analysis
