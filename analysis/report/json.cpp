// The --json documents of the commands (schema_version 1; keys documented in the README). With the config
// parser and calibrate's output, the only code that speaks nlohmann::json.
#include "analysis/report/json.hpp"

#include <nlohmann/json.hpp>

namespace spsim::analysis {

namespace {

std::string scope_name(models::Scope s) {
  return s == models::Scope::attention ? "attention" : s == models::Scope::layer ? "layer" : "model";
}

// The text of a document with "schema_version" first (nlohmann::json sorts keys), indent 2, ending in '\n'.
std::string dump_schema_first(const nlohmann::json& document) {
  nlohmann::ordered_json out;
  if (document.contains("schema_version")) out["schema_version"] = document.at("schema_version");
  for (const auto& [key, value] : document.items())
    if (key != "schema_version") out[key] = value;
  return out.dump(2) + "\n";
}

nlohmann::json check_to_json(const CheckResult& r) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = "check";
  j["config"] = r.config_name;
  j["strategy"] = {{"name", r.strategy}, {"degree", r.degree}, {"options", r.options}};
  j["scope"] = r.scope == models::Scope::layer ? "layer" : "attention";
  if (layer_shown(r.layer, r.tp))
    j["layer"] = {{"name", r.layer}, {"tp", r.tp}, {"options", r.layer_options}};
  if (!r.mask.empty()) j["mask"] = r.mask;
  j["dtype"] = rt::dtype_name(r.dtype);
  j["tolerance"] = r.tolerance;
  j["pass"] = r.pass();
  auto& arr = j["tensors"] = nlohmann::json::array();
  for (const auto& x : r.tensors)
    arr.push_back({{"name", x.name},
                   {"shape", x.shape},
                   {"rel_err", x.cmp.rel_err},
                   {"max_abs_err", x.cmp.max_abs_err},
                   {"alpha", x.cmp.alpha},
                   {"residual", x.cmp.residual},
                   {"pass", x.cmp.pass},
                   {"diagnosis", x.cmp.diagnosis}});
  return j;
}

nlohmann::json rank_json(const RankSummary& r) {
  return {{"rank", r.rank},
          {"compute_s", r.compute_s},
          {"comm_s", r.comm_s},
          {"exposed_comm_s", r.exposed_comm_s},
          {"idle_s", r.idle_s},
          {"bytes_sent", r.bytes_sent},
          {"peak_memory_bytes", r.peak_memory_bytes}};
}

nlohmann::json simulation_to_json(const Config& cfg, const SimSummary& s) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = "simulate";
  j["config"] = cfg.name;
  j["strategy"] = {
      {"name", cfg.strategy.name}, {"degree", cfg.strategy.degree}, {"options", cfg.strategy.options}};
  const auto& w = cfg.workload;
  j["workload"] = {{"model", cfg.model.name},
                   {"scope", scope_name(w.scope)},
                   {"seq_len", w.seq_len},
                   {"batch", w.batch},
                   {"dtype", rt::dtype_name(w.dtype)},
                   {"causal", w.causal},
                   {"passes", w.passes == models::Passes::fwd ? "fwd" : "fwd+bwd"}};
  if (w.bounds.active()) {  // documents or a window: named (outputs of plain masks stay as they were)
    j["workload"]["mask"] = w.bounds.describe(w.causal);
    if (w.bounds.has_documents()) j["workload"]["documents"] = w.bounds.document_lengths();
    if (w.bounds.window() > 0) j["workload"]["window"] = w.bounds.window();
  }
  if (w.scope != models::Scope::attention) {  // named when not the default (outputs stay as they were)
    if (cfg.model.mlp == models::Mlp::swiglu) j["workload"]["mlp"] = "swiglu";
    if (w.recompute) j["workload"]["recompute"] = true;
    if (cfg.model.hidden_dropout > 0) j["workload"]["hidden_dropout"] = cfg.model.hidden_dropout;
  }
  if (cfg.model.attention_dropout > 0) j["workload"]["attention_dropout"] = cfg.model.attention_dropout;
  j["parallel"] = {{"dp", cfg.parallel.dp}, {"bucket_mb", cfg.parallel.bucket_mb}};
  if (layer_shown(cfg.layer.name, cfg.parallel.tp)) {
    j["parallel"]["tp"] = cfg.parallel.tp;
    j["parallel"]["cp"] = cfg.strategy.degree;
    j["layer"] = {{"name", cfg.layer.name}, {"options", cfg.layer.options}};
  }
  if (cfg.parallel.distributed_optimizer) j["parallel"]["distributed_optimizer"] = true;
  j["cluster"] = {{"name", s.cluster},
                  {"gpu", s.gpu},
                  {"gpus", s.gpus},
                  {"network", sim::network_mode_name(cfg.simulation.network)},
                  {"attention_kernel", s.attention_kernel}};
  j["compute_slowdown"] = s.compute_slowdown;
  j["compute_slowdown_basis"] = cfg.simulation.compute_slowdown_basis;
  j["step_time_s"] = s.step_time_s;
  j["forward_s"] = s.forward_s;
  j["backward_s"] = s.backward_s;
  j["critical_rank"] = rank_json(s.ranks.at(static_cast<std::size_t>(s.critical_rank)));
  j["bytes_sent_by_kind"] = s.bytes_sent_by_kind;
  j["bytes_sent_max"] = s.bytes_sent_max;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["gpu_memory_bytes"] = s.gpu_memory_bytes;
  j["oom"] = s.oom;
  j["algorithms"] = s.algorithms;
  j["skipped_ops"] = s.skipped_ops;
  j["events"] = s.events;
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (const auto& r : s.ranks) ranks.push_back(rank_json(r));
  auto& ops = j["top_ops"] = nlohmann::json::array();
  for (const auto& o : s.top_ops)
    ops.push_back({{"name", o.name}, {"count", o.count}, {"time_s", o.time_s}, {"flops", o.flops}});
  return j;
}

nlohmann::json compare_to_json(const CompareResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    nlohmann::json values = nlohmann::json::object();
    for (const auto& v : r.values) values[v.path] = nlohmann::json::parse(v.json);
    nlohmann::json row = {{"values", values}, {"ok", r.ok()}};
    if (!r.ok()) {
      row["error"] = r.error;
      rows.push_back(std::move(row));
      continue;
    }
    const SimSummary& s = *r.sim;
    row["step_time_s"] = s.step_time_s;
    row["forward_s"] = s.forward_s;
    row["backward_s"] = s.backward_s;
    row["compute_s"] = s.compute_s;
    row["exposed_comm_s"] = s.exposed_comm_s;
    row["bytes_sent"] = s.bytes_sent_max;
    row["peak_memory_bytes"] = s.peak_memory_bytes;
    row["gpu_memory_bytes"] = s.gpu_memory_bytes;
    row["oom"] = s.oom;
    row["memory_model_bytes"] = r.memory ? nlohmann::json(r.memory->peak_bytes) : nlohmann::json(nullptr);
    row["closed_form_s"] = r.closed ? nlohmann::json(r.closed->step_s) : nlohmann::json(nullptr);
    const auto ratio = r.closed_ratio();
    row["sim_over_closed_form"] = ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
    row["closed_form_flagged"] = r.closed_form_flagged();
    const auto sp = result.speedup(i);
    row["speedup"] = sp ? nlohmann::json(*sp) : nlohmann::json(nullptr);
    rows.push_back(std::move(row));
  }
  return {{"schema_version", 1},
          {"command", "compare"},
          {"name", result.name},
          {"axes", result.axes},
          {"baseline_row", result.baseline ? nlohmann::json(*result.baseline + 1) : nlohmann::json(nullptr)},
          {"closed_form_tolerance", closed_form_tolerance},
          {"rows", rows}};
}

nlohmann::json run_to_json(const RunMeasurement& m, const Prediction& p) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = "run";
  j["config"] = m.config_name;
  j["strategy"] = {{"name", m.strategy}, {"degree", m.ranks}, {"options", m.options}};
  j["scope"] = m.scope == models::Scope::layer ? "layer" : "attention";
  j["dtype"] = rt::dtype_name(m.dtype);
  j["device"] = m.device;
  j["comm"] = m.comm;
  j["iters"] = m.run.iters;
  j["warmup"] = m.run.warmup;
  auto& phases = j["phases"] = nlohmann::json::array();
  const auto rows = phase_rows(m);
  for (const auto& r : rows) {
    nlohmann::json e{{"name", r.key},
                     {"median_s", r.spread.median},
                     {"min_s", r.spread.min},
                     {"max_s", r.spread.max},
                     {"slowest_rank", r.slowest_rank}};
    if (r.calls > 0) e["calls_per_iter"] = r.calls;
    if (r.key.rfind("comm:", 0) == 0) e["bytes_per_iter"] = r.bytes;
    phases.push_back(e);
  }
  j["verify"] = m.verify ? check_to_json(*m.verify) : nlohmann::json(nullptr);
  nlohmann::json pj{{"available", p.available}};
  if (p.available) {
    pj["cluster"] = p.cluster;
    auto& arr = pj["phases"] = nlohmann::json::array();
    for (const auto& x : compared_phases(rows, p.summary))
      arr.push_back(
          {{"name", x.name.substr(x.name.find_first_not_of(' '))},
           {"measured_s", x.measured},
           {"predicted_s", x.predicted},
           {"ratio", x.predicted > 0 ? nlohmann::json(x.measured / x.predicted) : nlohmann::json(nullptr)}});
  } else {
    pj["note"] = p.note;
  }
  j["prediction"] = pj;
  return j;
}

}  // namespace

std::string check_json(const CheckResult& result) {
  return check_to_json(result).dump(2) + "\n";
}

std::string simulation_json(const Config& config, const SimSummary& summary) {
  return dump_schema_first(simulation_to_json(config, summary));
}

std::string compare_json(const CompareResult& result) {
  return dump_schema_first(compare_to_json(result));
}

std::string collective_json(const CollectiveSweep& sweep) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["command"] = "collective";
  doc["cluster"] = sweep.cluster;
  doc["nodes"] = sweep.nodes;
  doc["ranks"] = sweep.ranks;
  doc["op"] = sweep.op;
  doc["network"] = sweep.network;
  if (!sweep.fabric.empty()) doc["fabric"] = sweep.fabric;
  doc["rows"] = nlohmann::ordered_json::array();
  for (const auto& r : sweep.rows)
    doc["rows"].push_back({{"size_bytes", static_cast<long long>(r.size_bytes)},
                           {"count", r.count},
                           {"type", "float"},
                           {"redop", sweep.reduces ? "sum" : "none"},
                           {"algorithm", r.algorithm},
                           {"protocol", sim::protocol_name(r.protocol)},
                           {"time_us", r.time_us},
                           {"algbw_GBps", r.algbw_GBps},
                           {"busbw_GBps", r.busbw_GBps}});
  return doc.dump(2) + "\n";
}

std::string run_json(const RunMeasurement& measurement, const Prediction& prediction) {
  return run_to_json(measurement, prediction).dump(2) + "\n";
}

}  // namespace spsim::analysis
