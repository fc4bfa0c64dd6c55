// Human tables of a simulation (render_simulation).
#include <cstdio>
#include <sstream>

#include "analysis/report/table.hpp"
#include "analysis/simulate/simulate.hpp"

namespace spsim::analysis {

namespace {

constexpr std::size_t kRankRows = 16;  // ranks listed in the human table; --json has all

std::string scope_name(models::Scope s) {
  return s == models::Scope::attention ? "attention" : s == models::Scope::layer ? "layer" : "model";
}

std::string percent(double part, double whole) {
  return whole > 0 ? format_fixed(100.0 * part / whole, 1) + "%" : "-";
}

std::string header(const Config& cfg, const SimSummary& s) {
  const auto& w = cfg.workload;
  std::string out = "simulate " + cfg.name + ": ";
  const bool tp = layer_shown(cfg.layer.name, cfg.parallel.tp);
  if (tp)
    out += cfg.layer.name + " (" + options_text(cfg.layer.options) + "), tp " +
           std::to_string(cfg.parallel.tp) + " x ";
  out += cfg.strategy.name;
  if (!cfg.strategy.options.empty()) out += " (" + options_text(cfg.strategy.options) + ")";
  out += (tp ? ", cp " : ", degree ") + std::to_string(cfg.strategy.degree);
  if (cfg.parallel.dp > 1) out += " x dp " + std::to_string(cfg.parallel.dp);
  if (cfg.world() > cfg.strategy.degree) out += " = " + std::to_string(cfg.world()) + " ranks";
  const std::string fabric = cfg.cluster && cfg.cluster->nodes > 1 && !cfg.cluster->topology
                                 ? sim::describe_fabric(cfg.cluster->inter_node.fabric)
                                 : "";
  out += " on " + s.cluster + " (" + std::to_string(s.gpus) + " x " + s.gpu +
         (fabric.empty() ? "" : "; " + fabric) + ")\n";
  // The MLP and recomputation matter beyond the attention scope; named when not the default.
  const bool layers = w.scope != models::Scope::attention;
  const std::string model =
      cfg.model.name + (layers && cfg.model.mlp == models::Mlp::swiglu ? " (SwiGLU MLP)" : "");
  // Dropout, named when on (outputs without it stay as they were).
  const auto shortest = [](double p) {  // 0.1, 0.05, 0.0001: as written in the config
    std::ostringstream s;
    s << p;
    return s.str();
  };
  std::string dropout;
  if (cfg.model.attention_dropout > 0) dropout += ", attention dropout " + shortest(cfg.model.attention_dropout);
  if (layers && cfg.model.hidden_dropout > 0) dropout += ", hidden dropout " + shortest(cfg.model.hidden_dropout);
  out += "workload: " + model + ", " + scope_name(w.scope) +
         (layers && w.recompute ? " with recomputation" : "") + dropout + ", seq " + std::to_string(w.seq_len) +
         ", batch " + std::to_string(w.batch) + ", " + std::string(rt::dtype_name(w.dtype)) +
         (w.bounds.active() ? ", mask " + w.bounds.describe(w.causal) : w.causal ? ", causal" : "") +
         (w.passes == models::Passes::fwd ? ", forward only" : ", forward+backward") + "; network " +
         sim::network_mode_name(cfg.simulation.network) + ", compute slowdown during comm " +
         format_fixed(100 * s.compute_slowdown, 0) + "%" +
         (cfg.simulation.compute_slowdown_given()
              ? std::string()
              : " (" + cfg.simulation.compute_slowdown_basis + ")") +
         (s.attention_kernel.empty() ? std::string() : "; attention kernel " + s.attention_kernel) + "\n\n";
  return out;
}

std::string overview(const SimSummary& s) {
  Table t({{"quantity"}, {"value", Align::right}, {"share of step", Align::right}});
  const double step = s.step_time_s;
  t.add_row({"step time", format_seconds(step), "100.0%"});
  t.add_row({"forward", format_seconds(s.forward_s), percent(s.forward_s, step)});
  t.add_row({"backward", format_seconds(s.backward_s), percent(s.backward_s, step)});
  const std::string cr = " (rank " + std::to_string(s.critical_rank) + ")";
  t.add_row({"compute" + cr, format_seconds(s.compute_s), percent(s.compute_s, step)});
  t.add_row({"communication" + cr, format_seconds(s.comm_s), percent(s.comm_s, step)});
  t.add_row(
      {"exposed communication" + cr, format_seconds(s.exposed_comm_s), percent(s.exposed_comm_s, step)});
  t.add_row({"idle" + cr, format_seconds(s.idle_s), percent(s.idle_s, step)});
  t.add_row({"peak memory (max over ranks)", format_bytes(static_cast<double>(s.peak_memory_bytes)),
             s.oom ? "OOM: > " + format_bytes(static_cast<double>(s.gpu_memory_bytes))
                   : "of " + format_bytes(static_cast<double>(s.gpu_memory_bytes))});
  return t.to_text();
}

std::string rank_table(const SimSummary& s) {
  Table t({{"rank"},
           {"compute", Align::right},
           {"comm", Align::right},
           {"exposed comm", Align::right},
           {"idle", Align::right},
           {"bytes sent", Align::right},
           {"peak memory", Align::right}});
  for (std::size_t i = 0; i < s.ranks.size() && i < kRankRows; ++i) {
    const auto& r = s.ranks[i];
    t.add_row({std::to_string(r.rank), format_seconds(r.compute_s), format_seconds(r.comm_s),
               format_seconds(r.exposed_comm_s), format_seconds(r.idle_s), format_bytes(r.bytes_sent),
               format_bytes(static_cast<double>(r.peak_memory_bytes))});
  }
  std::string out = "per rank:\n" + t.to_text();
  if (s.ranks.size() > kRankRows)
    out += "... " + std::to_string(s.ranks.size() - kRankRows) + " more ranks (--json lists all)\n";
  return out;
}

std::string bytes_table(const SimSummary& s) {
  Table t({{"kind"}, {"bytes sent (max over ranks)", Align::right}, {"algorithm/protocol"}});
  for (const auto& [kind, bytes] : s.bytes_sent_by_kind) {
    const auto it = s.algorithms.find(kind);
    t.add_row({kind, format_bytes(bytes), it == s.algorithms.end() ? "" : it->second});
  }
  return "communication by kind:\n" + t.to_text();
}

std::string ops_table(const SimSummary& s) {
  Table t({{"op"},
           {"count", Align::right},
           {"time", Align::right},
           {"share", Align::right},
           {"TFLOP/s", Align::right}});
  for (const auto& o : s.top_ops)
    t.add_row({o.name, std::to_string(o.count), format_seconds(o.time_s), percent(o.time_s, s.step_time_s),
               o.flops > 0 && o.time_s > 0 ? format_fixed(o.flops / o.time_s / 1e12, 1) : "-"});
  return "top ops (rank " + std::to_string(s.critical_rank) + "; comm ops from posting to end):\n" +
         t.to_text();
}

}  // namespace

std::string render_simulation(const Config& cfg, const SimSummary& s) {
  std::string out =
      header(cfg, s) + overview(s) + "\n" + rank_table(s) + "\n" + bytes_table(s) + "\n" + ops_table(s);
  out += "\n" + std::to_string(s.events) + " simulator events";
  if (s.skipped_ops > 0) out += ", " + std::to_string(s.skipped_ops) + " fully masked blocks skipped";
  out += s.oom ? "\nOUT OF MEMORY: the peak exceeds one GPU's memory\n" : "\n";
  return out;
}

}  // namespace spsim::analysis
