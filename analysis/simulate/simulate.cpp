// simulate(): trace a config's strategy, replay it on the simulated cluster, summarise and report.
#include "analysis/simulate/simulate.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <variant>

#include "analysis/config/cluster.hpp"
#include "analysis/report/table.hpp"
#include "analysis/simulate/chrome_trace.hpp"
#include "analysis/simulate/trace.hpp"
#include "runtime/core/error.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "sim/memory/memory.hpp"
#include "sim/replay/replay.hpp"

namespace spsim::analysis {

namespace {

using rt::trace::RankTrace;

sim::ReplayOptions replay_options(const Config& cfg) {
  sim::ReplayOptions o;
  o.algorithm = cfg.collectives.algorithm;
  o.protocol = cfg.collectives.protocol;
  o.compute_slowdown = cfg.simulation.compute_slowdown;
  o.algorithm_where = "collectives";
  return o;
}

std::filesystem::path trace_path(const Config& cfg, const SimulateOptions& options, std::string& where) {
  if (!options.chrome_trace.empty()) {
    where = "--trace";
    return options.chrome_trace;
  }
  where = "simulation.trace_out";
  if (!options.use_config_trace_out || cfg.simulation.trace_out.empty()) return {};
  const std::filesystem::path p(cfg.simulation.trace_out);
  return p.is_absolute() || cfg.source.empty() ? p : cfg.source.parent_path() / p;
}

RankSummary rank_summary(int rank, const sim::RankTimeline& tl, sim::Time step,
                         std::map<std::string, double>& bytes_by_kind) {
  const auto& busy = tl.busy;
  RankSummary r;
  r.rank = rank;
  r.compute_s = busy.compute.seconds();
  r.comm_s = busy.comm.seconds();
  r.exposed_comm_s = busy.exposed_comm.seconds();
  r.idle_s = (step - busy.compute - busy.exposed_comm).seconds();
  r.bytes_sent = tl.bytes_sent;
  for (const auto& c : tl.comm_totals) bytes_by_kind[std::string(rt::trace::comm_kind_name(c.kind))] = c.bytes_sent;
  r.peak_memory_bytes = tl.peak_bytes;
  return r;
}

// Compute ops by name and comm ops by kind on one rank, most time first.
std::vector<OpSummary> top_ops(const sim::RankTimeline& tl, std::size_t limit) {
  std::map<std::string, OpSummary> by_name;
  for (const auto& c : tl.compute_totals) {
    auto& s = by_name[std::string(c.name)];
    s.name = c.name;
    s.count = c.count;
    s.time_s = c.time_s;
    s.flops = c.flops;
  }
  for (const auto& c : tl.comm_totals) {
    const std::string name = std::string(rt::trace::comm_kind_name(c.kind)) + " (comm)";
    auto& s = by_name[name];
    s.name = name;
    s.count = c.count;
    s.time_s = c.time_s;
  }
  std::vector<OpSummary> out;
  for (auto& [name, s] : by_name) out.push_back(std::move(s));
  std::stable_sort(out.begin(), out.end(),
                   [](const OpSummary& a, const OpSummary& b) { return a.time_s > b.time_s; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

// Phase lengths on the critical rank (the one that sets the step time), so forward + backward add up
// to (at most) its busy span; a global span would mix the skews of different ranks.
void phase_times(const sim::RankTimeline& timeline, SimSummary& s) {
  for (const auto& p : timeline.phases) {
    if (p.name == "forward") s.forward_s += (p.end - p.start).seconds();
    if (p.name == "backward") s.backward_s += (p.end - p.start).seconds();
  }
}

void algorithm_names(const sim::ReplayResult& res, SimSummary& s) {
  // Distinct (kind, algorithm, protocol) first, as numbers: a large replay has millions of comm ops.
  std::set<std::tuple<rt::CommKind, int, sim::Protocol>> seen;
  for (const auto& tl : res.ranks) seen.insert(tl.algorithms.begin(), tl.algorithms.end());
  std::map<std::string, std::set<std::string>> used;
  for (const auto& [kind, algorithm, protocol] : seen) {
    const std::string algo = algorithm >= 0 ? res.algorithms[static_cast<std::size_t>(algorithm)] : "p2p";
    used[std::string(rt::trace::comm_kind_name(kind))].insert(algo + "/" + sim::protocol_name(protocol));
  }
  for (const auto& [kind, names] : used) {
    std::string joined;
    for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
    s.algorithms[kind] = joined;
  }
}

// Before replaying: the replay keeps, per record, its issue time and per op its timing, about as much
// again as the traces hold.
void check_replay_memory(std::span<const RankTrace> traces, const rt::MemoryLimit& limit) {
  double held = 0;
  for (const auto& t : traces) held += rt::trace::trace_bytes(t);
  if (!traces.empty() && traces.front().shapes) held += traces.front().shapes->bytes();  // shared by all
  if (2 * held > limit.bytes)
    throw ResourceError("strategy.degree", "replaying needs about " + format_bytes(2 * held) +
                                               " (the traces of " + std::to_string(traces.size()) +
                                               " ranks and their timelines), more than the " +
                                               format_bytes(limit.bytes) + " available (" + limit.source +
                                               "; --max-memory sets the limit)");
}

}  // namespace

SimSummary simulate(const Config& cfg, const SimulateOptions& options) {
  if (!cfg.sweep.empty())
    throw InputError("sweep", "simulate runs one configuration; this config sweeps " +
                                  std::to_string(cfg.sweep.size()) + " axes (use `spsim compare`)");
  if (!cfg.cluster)
    throw InputError("cluster",
                     "simulate needs a cluster, e.g. {\"preset\": \"dgx-a100\", \"nodes\": 1}; presets: " +
                         join_names(cluster_presets()));
  const sim::Cluster cluster(*cfg.cluster);
  const int gpus = static_cast<int>(cluster.gpus().size());
  if (cfg.strategy.degree > gpus)
    throw InputError(cfg.strategy.degree_key, "degree " + std::to_string(cfg.strategy.degree) +
                                                  " is larger than the " + std::to_string(gpus) +
                                                  " GPUs of the cluster; use at most " + std::to_string(gpus) +
                                                  " or add nodes (cluster.nodes)");
  if (cfg.world() > gpus) {
    const std::string layout = (cfg.parallel.tp > 1 ? "tp " + std::to_string(cfg.parallel.tp) + " × " : "") +
                               "degree " + std::to_string(cfg.strategy.degree) +
                               (cfg.parallel.dp > 1 ? " × dp " + std::to_string(cfg.parallel.dp) : "");
    throw InputError(cfg.world_key(), layout + " needs " + std::to_string(cfg.world()) + " GPUs; the cluster has " +
                                          std::to_string(gpus) + " (add nodes with cluster.nodes, or use fewer ranks)");
  }
  const sim::ComputeModel model(cluster.config().gpu, cfg.workload.dtype, "workload.dtype",
                                cfg.simulation.attention_kernel);
  const auto mode = cfg.simulation.network;
  const rt::MemoryLimit limit = options.memory_limit ? *options.memory_limit : rt::host_memory_limit();
  const auto stage = [&](const std::string& what) {
    if (options.progress) options.progress(what);
  };
  // The memory curve (issue times, a point per Alloc/Free on every rank) is only drawn in a Chrome trace,
  // which needs every record after the replay: only then are the traces taken whole. Otherwise each
  // rank's records stream into the replay as its cursor reaches them.
  std::string where;
  const auto path = trace_path(cfg, options, where);
  sim::ReplayOptions replay_opts = replay_options(cfg);
  replay_opts.issue_times = !path.empty();
  replay_opts.op_timings = !path.empty() || options.bars != nullptr;
  std::vector<RankTrace> traces;
  sim::ReplayResult res;
  if (!path.empty()) {
    stage("tracing the step on " + std::to_string(cfg.world()) + " ranks");
    traces = rt::in_stage("tracing the step", [&] { return trace_config(cfg, limit.bytes / 2); });
    check_replay_memory(traces, limit);
    std::size_t records = 0;
    for (const auto& t : traces) records += t.records.size();
    stage("replaying " + std::to_string(records) + " records on " + cluster.config().name);
    res = rt::in_stage("replaying the step", [&] { return sim::replay(traces, cluster, mode, model, replay_opts); });
  } else {
    stage("tracing and replaying the step on " + std::to_string(cfg.world()) + " ranks of " + cluster.config().name);
    res = rt::in_stage("tracing and replaying the step", [&] {
      StreamedStep step(cfg, limit.bytes, limit.source);
      return sim::replay(step.ranks(), cluster, mode, model, replay_opts);
    });
  }

  std::size_t records = 0;
  for (const auto& tl : res.ranks) records += tl.records;
  stage("summarising " + std::to_string(res.events) + " events of " + std::to_string(records) + " records");
  SimSummary s;
  s.step_time_s = res.makespan.seconds();
  s.events = res.events;
  s.cluster = cluster.config().name;
  s.gpu = cluster.config().gpu.name;
  s.gpus = gpus;
  s.compute_slowdown = cfg.simulation.compute_slowdown;
  s.attention_kernel = model.attention_kernel();
  s.gpu_memory_bytes = static_cast<std::uint64_t>(cluster.config().gpu.hbm_bytes);
  for (std::size_t r = 0; r < res.ranks.size(); ++r) {
    const auto& tl = res.ranks[r];
    std::map<std::string, double> by_kind;
    s.ranks.push_back(rank_summary(static_cast<int>(r), tl, res.makespan, by_kind));
    for (const auto& [kind, bytes] : by_kind)
      s.bytes_sent_by_kind[kind] = std::max(s.bytes_sent_by_kind[kind], bytes);
    s.bytes_sent_max = std::max(s.bytes_sent_max, s.ranks.back().bytes_sent);
    s.peak_memory_bytes = std::max(s.peak_memory_bytes, tl.peak_bytes);
    // Ties go to the busier rank: a rank that only waits for the busiest one's last message ends
    // with it, but its compute/exposed split says nothing about what sets the step.
    const auto& best = res.ranks[static_cast<std::size_t>(s.critical_rank)];
    const double best_compute = s.ranks[static_cast<std::size_t>(s.critical_rank)].compute_s;
    if (tl.finish > best.finish || (tl.finish == best.finish && s.ranks.back().compute_s > best_compute))
      s.critical_rank = static_cast<int>(r);
    s.skipped_ops += tl.skipped;
  }
  s.oom = static_cast<double>(s.peak_memory_bytes) > cluster.config().gpu.hbm_bytes;
  const auto& crit = s.ranks[static_cast<std::size_t>(s.critical_rank)];
  s.compute_s = crit.compute_s;
  s.comm_s = crit.comm_s;
  s.exposed_comm_s = crit.exposed_comm_s;
  s.idle_s = crit.idle_s;
  const auto cr = static_cast<std::size_t>(s.critical_rank);
  s.top_ops = top_ops(res.ranks[cr], 10);
  phase_times(res.ranks[cr], s);
  algorithm_names(res, s);

  if (options.bars)
    for (std::size_t r = 0; r < res.ranks.size(); ++r) {
      for (const auto& c : res.ranks[r].compute)
        options.bars->push_back({static_cast<int>(r), false, c.start.seconds(), c.end.seconds()});
      for (const auto& c : res.ranks[r].comm)
        options.bars->push_back({static_cast<int>(r), true, c.ready.seconds(), c.end.seconds()});
    }
  if (!path.empty()) {
    std::vector<sim::MemoryProfile> memory;
    for (std::size_t r = 0; r < traces.size(); ++r)
      memory.push_back(sim::memory_profile(traces[r], res.ranks[r].issue, true));
    write_chrome_trace(path, where, traces, res, cluster, memory);
  }
  return s;
}

}  // namespace spsim::analysis
