// run_strategy: the timed iterations of a real multi-process run, gathering, verification and stats.
#include "analysis/run/run.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "analysis/check/check_data.hpp"
#include "analysis/closed_form/closed_form.hpp"
#include "analysis/report/table.hpp"
#include "runtime/core/error.hpp"
#include "strategies/layer.hpp"
#include "strategies/step.hpp"

namespace spsim::analysis {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// RankIteration <-> a flat row of doubles, for gathering through the Comm.
constexpr int kFields = 4 + rt::kCommKinds + rt::kOpClasses;
void pack(const RankIteration& it, std::vector<double>& out) {
  out.insert(out.end(), {it.forward_s, it.backward_s, it.comm_forward_s, it.comm_backward_s});
  out.insert(out.end(), it.comm_s.begin(), it.comm_s.end());
  out.insert(out.end(), it.op_s.begin(), it.op_s.end());
}
RankIteration unpack(const double* v) {
  RankIteration it{v[0], v[1], v[2], v[3], {}, {}};
  std::copy_n(v + 4, rt::kCommKinds, it.comm_s.begin());
  std::copy_n(v + 4 + rt::kCommKinds, rt::kOpClasses, it.op_s.begin());
  return it;
}

double blocked_total(const rt::CommStats& s) {
  double t = 0;
  for (const auto& k : s) t += k.blocked_s;
  return t;
}

// A hidden hook for the robustness test: SPSIM_TEST_KILL_RANK=r makes rank r kill itself with SIGKILL
// at the start of the first timed iteration, while the others wait for it in a collective.
void maybe_kill_self(int rank) {
  const char* env = std::getenv("SPSIM_TEST_KILL_RANK");
  if (env && *env && std::to_string(rank) == env) std::raise(SIGKILL);
}

// Every rank's outputs and gradients, all-gathered and put back in global order.
class Gatherer {
 public:
  Gatherer(const strategies::StepConfig& step, const strategies::StrategyInfo& info, rt::Device& dev,
           rt::Comm& comm)
      : step_(step), info_(info), dev_(dev), comm_(comm) {}

  // t: this rank's rows, [a, n, c] (or [n, a, c] when `sequence_first`; every rank the same n); returns
  // the global [a, S, c] array (on every rank). Ranks that hold the same rows (tensor parallelism
  // without sequence parallelism) hold the same values; the last one's are kept.
  HostVec global(const rt::Tensor& t, bool sequence_first = false) {
    const int p = comm_.size();
    const std::int64_t a = t.dim(sequence_first ? 1 : 0), n = t.dim(sequence_first ? 0 : 1), c = t.dim(2),
                       all_rows = n * p, s = step_.workload.seq_len;
    rt::Tensor all = dev_.empty({a, all_rows, c});
    if (sequence_first) {  // [p·n, a, c] → [a, p·n, c]
      rt::Tensor rows = dev_.empty({all_rows, a, c});
      comm_.all_gather(t, rows, 0).wait();
      all = dev_.permute(rows, std::array<int, 3>{1, 0, 2});
    } else {
      comm_.all_gather(t, all, 1).wait();
    }
    const HostVec gathered = dev_.to_host(all);
    HostVec out(static_cast<std::size_t>(a * s * c));
    for (int r = 0; r < p; ++r) {
      std::vector<std::int64_t> block(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) block[static_cast<std::size_t>(i)] = r * n + i;
      const HostVec local = gather_rows(gathered, a, all_rows, c, block);
      scatter_rows(local, out, a, s, c, strategies::step_rows(step_, info_, r).expand());
    }
    return out;
  }

  // The whole gradient of layer parameter `i` from every rank's shard `local` (shards of one parameter
  // have one size on every rank): the first CP rank's TP ranks hold every shard.
  HostVec whole(const rt::Tensor& local, std::size_t i, const rt::Shape& shape) {
    const std::int64_t n = local.numel();
    rt::Tensor all = dev_.empty({comm_.size(), n});
    comm_.all_gather(local.reshape({1, n}), all, 0).wait();
    const HostVec gathered = dev_.to_host(all);
    HostVec out(static_cast<std::size_t>(rt::numel(shape)));
    for (int r = 0; r < step_.tp; ++r)
      strategies::step_shards(step_, r)[i].put(
          HostVec(gathered.begin() + r * n, gathered.begin() + (r + 1) * n), out);
    return out;
  }

 private:
  const strategies::StepConfig& step_;
  const strategies::StrategyInfo& info_;
  rt::Device& dev_;
  rt::Comm& comm_;
};

// One rank of the run: its shard of the check inputs on the device, and one timed iteration at a time
// of the step program (strategies/step.hpp) on them.
class RankRun {
 public:
  RankRun(const Config& cfg, const strategies::StrategyInfo& info, rt::TimedDevice& dev, rt::TimedComm& comm)
      : cfg_(cfg),
        info_(info),
        dev_(dev),
        comm_(comm),
        step_(run_step_config(cfg)),
        problem_(models::attention_problem(cfg.model, cfg.workload)) {
    positions_ = strategies::step_rows(step_, info, comm.rank()).expand();
    if (layer())
      load_layer();
    else
      load_attention();
  }

  [[nodiscard]] bool layer() const { return cfg_.workload.scope == models::Scope::layer; }

  RankIteration iterate() {
    RankIteration it;
    comm_.reset();
    dev_.reset();
    auto t0 = Clock::now();
    // Weight gradients in DDP buckets of parallel.bucket_mb, as the simulated step reduces them.
    strategies::Step step(step_, info_, dev_, comm_, data());
    step.forward();
    finish_phase(it.forward_s, it.comm_forward_s, t0);
    step.backward();
    outputs_ = step.outputs();
    if (layer()) weight_grads_ = step.weight_grads();
    dev_.synchronize();
    it.backward_s = since(t0);
    it.comm_backward_s = blocked_total(comm_.stats()) - it.comm_forward_s;
    for (std::size_t k = 0; k < rt::kCommKinds; ++k) it.comm_s[k] = comm_.stats()[k].blocked_s;
    for (std::size_t k = 0; k < rt::kOpClasses; ++k) it.op_s[k] = dev_.stats()[k].seconds;
    return it;
  }

  // Collective: the last iteration's results in global order (meaningful on rank 0).
  std::vector<Array> gather_results(Gatherer& g) {
    const auto& p = problem_;
    std::vector<Array> out;
    if (layer()) {
      const rt::Shape xs{p.batch, p.seq_len, cfg_.model.hidden};
      const bool seq_first = strategies::step_sequence_first(step_);
      out.push_back({"Y", xs, g.global(outputs_[0], seq_first)});
      out.push_back({"dX", xs, g.global(outputs_[1], seq_first)});
      const auto shapes = strategies::layer_param_shapes(cfg_.model);
      for (std::size_t i = 0; i < shapes.size(); ++i)
        out.push_back(
            {gradient_name(shapes[i].name), shapes[i].shape, g.whole(weight_grads_.tensors[i], i, shapes[i].shape)});
      return out;
    }
    const rt::Shape qs{p.batch * p.heads, p.seq_len, p.head_dim},
        ks{p.batch * p.kv_heads, p.seq_len, p.head_dim};
    const char* names[] = {"O", "dQ", "dK", "dV"};
    for (std::size_t i = 0; i < 4; ++i) out.push_back({names[i], i < 2 ? qs : ks, g.global(outputs_[i])});
    return out;
  }

  [[nodiscard]] const models::AttnProblem& problem() const { return problem_; }
  [[nodiscard]] const strategies::StepConfig& step() const { return step_; }

 private:
  // The step's inputs are the loaded shards and weights (made once, reused by every iteration).
  [[nodiscard]] strategies::StepData data() {
    return {[this](strategies::StepInput which, const rt::Shape&, const rt::Positions&) {
              switch (which) {
                case strategies::StepInput::q:
                case strategies::StepInput::x:
                  return inputs_[0];
                case strategies::StepInput::k:
                case strategies::StepInput::d_y:
                  return inputs_[1];
                case strategies::StepInput::v:
                  return inputs_[2];
                case strategies::StepInput::d_o:
                  return inputs_[3];
              }
              return rt::Tensor();
            },
            [this](int, const strategies::ParamShard& shard) { return weights_.at(shard.name); }, nullptr};
  }

  // Ends a phase: waits for the device, records the phase's wall time and blocked communication.
  void finish_phase(double& phase_s, double& comm_s, Clock::time_point& t0) {
    dev_.synchronize();
    phase_s = since(t0);
    comm_s = blocked_total(comm_.stats());
    t0 = Clock::now();
  }

  rt::Tensor shard(const HostVec& global, std::int64_t a, std::int64_t c, bool sequence_first = false) {
    const auto n = static_cast<std::int64_t>(positions_.size());
    return dev_.from_host(gather_rows(global, a, problem_.seq_len, c, positions_, sequence_first),
                          sequence_first ? rt::Shape{n, a, c} : rt::Shape{a, n, c});
  }

  void load_attention() {
    const auto& p = problem_;
    const AttentionInputs in = attention_inputs(p, cfg_.check.seed);
    const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, d = p.head_dim;
    inputs_ = {shard(in.q, bh, d), shard(in.k, bkv, d), shard(in.v, bkv, d), shard(in.r, bh, d)};
  }

  void load_layer() {
    const auto& m = cfg_.model;
    const LayerInputs in = layer_inputs(m, problem_.batch, problem_.seq_len, cfg_.check.seed);
    for (const auto& shard : strategies::step_shards(step_, comm_.rank()))
      weights_.add(shard.name, dev_.from_host(shard.take(in.params.at(shard.name).data), shard.local()));
    const bool seq_first = strategies::step_sequence_first(step_);
    inputs_ = {shard(in.x, problem_.batch, m.hidden, seq_first), shard(in.r, problem_.batch, m.hidden, seq_first)};
  }

  const Config& cfg_;
  const strategies::StrategyInfo& info_;
  rt::TimedDevice& dev_;
  rt::TimedComm& comm_;
  strategies::StepConfig step_;
  models::AttnProblem problem_;
  std::vector<std::int64_t> positions_;
  std::vector<rt::Tensor> inputs_;
  strategies::NamedTensors weights_;
  std::vector<rt::Tensor> outputs_;
  strategies::NamedTensors weight_grads_;
};

// Gathers every rank's iterations to every rank: samples[i][r].
std::vector<std::vector<RankIteration>> gather_samples(const std::vector<RankIteration>& mine,
                                                       rt::Device& dev, rt::Comm& comm) {
  std::vector<double> flat;
  for (const auto& it : mine) pack(it, flat);
  const auto width = static_cast<std::int64_t>(flat.size());
  if (width == 0) return {};
  rt::Tensor all = dev.empty({comm.size(), width});
  comm.all_gather(dev.from_host(flat, {1, width}), all, 0).wait();
  const HostVec h = dev.to_host(all);
  std::vector<std::vector<RankIteration>> out(
      mine.size(), std::vector<RankIteration>(static_cast<std::size_t>(comm.size())));
  for (std::size_t i = 0; i < mine.size(); ++i)
    for (int r = 0; r < comm.size(); ++r)
      out[i][static_cast<std::size_t>(r)] =
          unpack(h.data() + r * width + static_cast<std::int64_t>(i) * kFields);
  return out;
}

CheckResult verify(const Config& cfg, RankRun& run, const std::vector<Array>& got) {
  CheckResult res;
  res.config_name = cfg.name;
  res.strategy = cfg.strategy.name;
  res.options = cfg.strategy.options;
  res.degree = cfg.strategy.degree;
  res.layer = cfg.layer.name;
  res.layer_options = cfg.layer.options;
  res.tp = cfg.parallel.tp;
  res.dtype = run_dtype(cfg);
  res.scope = cfg.workload.scope;
  res.tolerance = tolerance_for(res.dtype);
  const auto& p = run.problem();
  const std::vector<Array> ref =
      run.layer()
          ? layer_reference_arrays(cfg.model, p, layer_inputs(cfg.model, p.batch, p.seq_len, cfg.check.seed))
          : attention_reference_arrays(p, attention_inputs(p, cfg.check.seed));
  res.tensors = compare_arrays(ref, got, res.tolerance, GroupSizes(res.degree, res.tp));
  return res;
}

}  // namespace

strategies::StepConfig run_step_config(const Config& cfg) {
  strategies::StepConfig s = step_config(cfg);
  s.workload.passes = models::Passes::fwd_bwd;
  return s;
}

rt::DType run_dtype(const Config& config) {
  return config.check.dtype_given ? config.check.dtype : rt::DType::f32;
}

Spread spread_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {median, v.front(), v.back()};
}

RunMeasurement run_strategy(const Config& cfg, rt::Device& dev, rt::Comm& comm, const RunOptions& options) {
  const auto* info = &cfg.strategy.info();
  rt::TimedComm timed(comm, options.sync_collectives);
  rt::TimedDevice timed_dev(dev);
  RankRun run(cfg, *info, timed_dev, timed);
  RunMeasurement m;
  m.config_name = cfg.name;
  m.strategy = cfg.strategy.name;
  m.options = cfg.strategy.options;
  m.ranks = comm.size();
  m.tp = cfg.parallel.tp;
  if (layer_shown(cfg.layer.name, m.tp)) m.layer = cfg.layer.name + " (" + options_text(cfg.layer.options) + ")";
  m.dtype = dev.dtype();
  m.scope = cfg.workload.scope;
  m.device = std::string(dev.name());
  m.comm = std::string(comm.backend());
  m.run = options;
  std::vector<RankIteration> mine;
  for (int i = 0; i < options.warmup + options.iters; ++i) {
    comm.barrier();  // every rank starts the iteration together (untimed)
    if (i == options.warmup) maybe_kill_self(comm.rank());
    const RankIteration it = run.iterate();
    if (i >= options.warmup) mine.push_back(it);
  }
  m.per_iteration = timed.stats();
  m.ops_per_iteration = timed_dev.stats();
  m.samples = gather_samples(mine, dev, comm);
  if (options.verify) {
    Gatherer g(run.step(), *info, dev, comm);
    const auto got = run.gather_results(g);
    if (comm.rank() == 0) m.verify = verify(cfg, run, got);
  }
  return m;
}

Config run_config(const Config& config, int world_size, rt::DType dtype,
                  const std::optional<sim::ClusterConfig>& cluster) {
  if (!config.sweep.empty())
    throw InputError("sweep", "run executes one configuration; this config sweeps " +
                                  std::to_string(config.sweep.size()) + " axes");
  if (config.workload.scope == models::Scope::model)
    throw InputError("workload.scope", "'model' is not supported by run; valid choices: attention, layer");
  if (config.parallel.dp != 1)
    throw InputError("parallel.dp", "run executes one SP group on the job's ranks; dp " +
                                        std::to_string(config.parallel.dp) + " is not supported (use dp 1)");
  Config c = config;
  const int tp = config.parallel.tp;
  if (world_size % tp != 0)
    throw InputError("parallel.tp", "the run has " + std::to_string(world_size) +
                                        " ranks, which tp × cp × dp = " + std::to_string(tp) + " × cp × 1 cannot make (" +
                                        std::to_string(world_size) + " is not a multiple of tp " +
                                        std::to_string(tp) + "); run with a multiple of tp ranks");
  c.strategy.degree = world_size / tp;
  try {
    check_parallel_layout(c);
  } catch (const InputError& e) {
    // The ranks set the degree here: a strategy that cannot run at it is refused at strategy.degree.
    throw InputError(e.where() == "strategy" ? "strategy.degree" : e.where(),
                     "the run has " + std::to_string(world_size) + " ranks (tp " + std::to_string(tp) + " × cp " +
                         std::to_string(c.strategy.degree) + "): " + e.message());
  }
  c.workload.dtype = dtype;
  if (cluster) {
    c.cluster = *cluster;
    resolve_compute_slowdown(c);  // the slowdown follows the cluster the run is predicted on
  }
  return c;
}

std::vector<PhaseRow> phase_rows(const RunMeasurement& m) {
  using Metric = std::function<double(const RankIteration&)>;
  auto row = [&](std::string name, std::string key, const Metric& f) {
    PhaseRow r{std::move(name), std::move(key), {}, 0, 0, 0};
    std::vector<double> per_iter;
    for (const auto& ranks : m.samples) {
      double worst = 0;
      for (const auto& it : ranks) worst = std::max(worst, f(it));
      per_iter.push_back(worst);
    }
    r.spread = spread_of(per_iter);
    double slowest = -1;
    for (int rank = 0; rank < m.ranks; ++rank) {
      std::vector<double> v;
      for (const auto& ranks : m.samples) v.push_back(f(ranks[static_cast<std::size_t>(rank)]));
      const double med = spread_of(v).median;
      if (med > slowest) slowest = med, r.slowest_rank = rank;
    }
    return r;
  };
  std::vector<PhaseRow> rows;
  rows.push_back(row("forward", "forward", [](auto& it) { return it.forward_s; }));
  rows.push_back(row("backward", "backward", [](auto& it) { return it.backward_s; }));
  rows.push_back(
      row("step (forward + backward)", "step", [](auto& it) { return it.forward_s + it.backward_s; }));
  rows.push_back(row("compute (step - communication)", "compute", [](auto& it) {
    return it.forward_s + it.backward_s - it.comm_forward_s - it.comm_backward_s;
  }));
  for (std::size_t k = 0; k < rt::kOpClasses; ++k) {
    if (m.ops_per_iteration[k].calls == 0) continue;
    const std::string name(rt::op_class_name(static_cast<rt::OpClass>(k)));
    auto r = row("  " + name, "op:" + name, [k](auto& it) { return it.op_s[k]; });
    r.calls = m.ops_per_iteration[k].calls;
    rows.push_back(std::move(r));
  }
  rows.push_back(row("communication (blocked)", "communication",
                     [](auto& it) { return it.comm_forward_s + it.comm_backward_s; }));
  for (std::size_t k = 0; k < rt::kCommKinds; ++k) {
    const auto& s = m.per_iteration[k];
    if (s.calls == 0) continue;
    // The barrier slot: --sync-collectives' waits for the group's last member before each collective.
    const std::string name = static_cast<rt::CommKind>(k) == rt::CommKind::barrier
                                 ? std::string("peer_wait")
                                 : std::string(rt::comm_kind_name(static_cast<rt::CommKind>(k)));
    auto r = row("  " + name, "comm:" + name, [k](auto& it) { return it.comm_s[k]; });
    r.calls = s.calls;
    r.bytes = s.bytes;
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace spsim::analysis
