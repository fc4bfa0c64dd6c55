// The gradient check: inputs, reference, the strategy on P thread ranks, and the comparison.
#include "analysis/check/check.hpp"

#include <cmath>
#include <cstdio>
#include <future>
#include <mutex>

#include "analysis/check/check_data.hpp"
#include "analysis/check/npy.hpp"
#include "analysis/report/table.hpp"
#include "models/layer_params.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/core/error.hpp"
#include "runtime/threads/threads_comm.hpp"
#include "strategies/layer.hpp"

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
};

strategies::StrategyContext make_context(const RankSetup& s, rt::Device& dev, rt::Comm& comm) {
  auto positions = s.info.positions(comm.rank(), comm.size(), s.problem.seq_len, s.cfg.strategy.options);
  return strategies::StrategyContext{dev, comm, s.problem, s.cfg.strategy.options, std::move(positions)};
}

Outcome check_attention(const RankSetup& s) {
  const auto& p = s.problem;
  const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, S = p.seq_len, d = p.head_dim;
  const AttentionInputs in = attention_inputs(p, s.cfg.check.seed);
  const Vec &q = in.q, &k = in.k, &v = in.v, &r = in.r;

  // The reference depends only on the inputs, so it runs while the ranks do: the ranks wait on each
  // other at every collective, and the reference's threads fill those gaps on otherwise idle cores.
  // Its threads split the work the same way whatever else runs, so its numbers do not change.
  auto reference = std::async(std::launch::async, [&] { return attention_reference_arrays(p, in); });
  const int P = s.cfg.strategy.degree;
  Vec o(q.size()), dq(q.size()), dk(k.size()), dv(v.size());
  std::mutex mu;
  rt::run_ranks(P, [&](rt::Comm& comm) {
    rt::CpuDevice dev(s.cfg.check.dtype);
    auto ctx = make_context(s, dev, comm);
    const auto pos = ctx.positions;
    const auto n = static_cast<std::int64_t>(pos.size());
    auto load = [&](const Vec& g, std::int64_t a) { return dev.from_host(gather_rows(g, a, S, d, pos), {a, n, d}); };
    auto strategy = s.info.create(std::move(ctx));
    rt::Tensor out = strategy->forward(load(q, bh), load(k, bkv), load(v, bkv));
    auto grads = strategy->backward(load(r, bh));
    const Vec ho = dev.to_host(out), hq = dev.to_host(grads.dq), hk = dev.to_host(grads.dk),
              hv = dev.to_host(grads.dv);
    std::lock_guard lock(mu);
    scatter_rows(ho, o, bh, S, d, pos);
    scatter_rows(hq, dq, bh, S, d, pos);
    scatter_rows(hk, dk, bkv, S, d, pos);
    scatter_rows(hv, dv, bkv, S, d, pos);
  });
  const rt::Shape qs{bh, S, d}, ks{bkv, S, d};
  Outcome out;
  out.inputs = {{"q", qs, q}, {"k", ks, k}, {"v", ks, v}, {"dO", qs, r}};
  out.reference = reference.get();
  out.strategy = {{"O", qs, o}, {"dQ", qs, dq}, {"dK", ks, dk}, {"dV", ks, dv}};
  return out;
}

Outcome check_layer(const RankSetup& s) {
  const auto& m = s.cfg.model;
  const auto& p = s.problem;
  const std::int64_t B = p.batch, S = p.seq_len, h = m.hidden;
  const LayerInputs in = layer_inputs(m, B, S, s.cfg.check.seed);
  const models::LayerParams& params = in.params;
  const Vec &x = in.x, &r = in.r;

  auto reference = std::async(std::launch::async, [&] { return layer_reference_arrays(m, p, in); });  // as above
  const int P = s.cfg.strategy.degree;
  Vec y(x.size()), dx(x.size());
  std::vector<Vec> dw;  // from rank 0 (the all-reduce leaves every rank the same sum)
  std::mutex mu;
  const auto shapes = strategies::layer_param_shapes(m);
  rt::run_ranks(P, [&](rt::Comm& comm) {
    rt::CpuDevice dev(s.cfg.check.dtype);
    auto ctx = make_context(s, dev, comm);
    const auto pos = ctx.positions;
    const auto n = static_cast<std::int64_t>(pos.size());
    strategies::NamedTensors weights;
    for (const auto& ps : shapes) weights.add(ps.name, dev.from_host(params.at(ps.name).data, ps.shape));
    strategies::SpLayer layer(std::move(ctx), s.info, m, std::move(weights));
    rt::Tensor out = layer.forward(dev.from_host(gather_rows(x, B, S, h, pos), {B, n, h}));
    auto grads = layer.backward(dev.from_host(gather_rows(r, B, S, h, pos), {B, n, h}));
    const Vec hy = dev.to_host(out), hdx = dev.to_host(grads.dx);
    std::vector<Vec> hw;
    if (comm.rank() == 0)
      for (const auto& t : grads.weights.tensors) hw.push_back(dev.to_host(t));
    std::lock_guard lock(mu);
    scatter_rows(hy, y, B, S, h, pos);
    scatter_rows(hdx, dx, B, S, h, pos);
    if (comm.rank() == 0) dw = std::move(hw);
  });
  const rt::Shape xs{B, S, h};
  Outcome out;
  out.inputs = {{"x", xs, x}, {"dY", xs, r}};
  for (const auto& ps : shapes) out.inputs.push_back({ps.name, ps.shape, params.at(ps.name).data});
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

CheckResult run_check(const Config& cfg, const CheckOptions& options) {
  const auto* info = strategies::builtin().find(cfg.strategy.name);
  if (!info) throw InputError("strategy.name", "unknown strategy '" + cfg.strategy.name + "'");
  if (cfg.workload.scope == models::Scope::model)
    throw InputError("workload.scope", "'model' is not supported by check; valid choices: attention, layer");
  RankSetup setup{cfg, *info, models::attention_problem(cfg.model, cfg.workload)};
  const Outcome o = cfg.workload.scope == models::Scope::layer ? check_layer(setup) : check_attention(setup);
  if (!options.dump_dir.empty()) dump(o, options.dump_dir);

  CheckResult res;
  res.config_name = cfg.name;
  res.strategy = cfg.strategy.name;
  res.options = cfg.strategy.options;
  res.degree = cfg.strategy.degree;
  res.dtype = cfg.check.dtype;
  res.scope = cfg.workload.scope;
  res.tolerance = tolerance_for(cfg.check.dtype);
  res.tensors = compare_arrays(o.reference, o.strategy, res.tolerance, res.degree);
  return res;
}

namespace {
std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", v);
  return buf;
}
std::string options_text(const strategies::Options& o) {
  std::string s;
  for (const auto& [k, v] : o) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
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
               sci(x.cmp.residual), x.cmp.pass ? "pass" : "FAIL", x.cmp.diagnosis == "matches" ? "" : x.cmp.diagnosis});
    failed += x.cmp.pass ? 0 : 1;
  }
  std::string out = "spsim check: " + r.config_name + "\nstrategy " + r.strategy + " (" + options_text(r.options) +
                    "), P = " + std::to_string(r.degree) + ", scope " +
                    (r.scope == models::Scope::layer ? "layer" : "attention") + ", " +
                    std::string(rt::dtype_name(r.dtype)) + ", tolerance " + sci(r.tolerance) + "\n\n";
  out += t.to_text();
  out += "\n";  // appended separately: GCC 12 -O3 warns (-Wrestrict, a false positive) on "\n" + string&&
  out += (failed == 0 ? std::string("PASS: all ") + std::to_string(r.tensors.size()) + " tensors match the reference\n"
                             : std::string("FAIL: ") + std::to_string(failed) + " of " +
                                   std::to_string(r.tensors.size()) + " tensors differ from the reference\n");
  return out;
}


}  // namespace spsim::analysis
