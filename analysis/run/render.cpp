// The run's tables and its prediction: the one place `run` calls the simulator.
#include <cstdio>
#include <map>

#include "analysis/report/table.hpp"
#include "analysis/run/run.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"

namespace spsim::analysis {

namespace {

std::string ratio_text(double measured, double predicted) {
  return predicted > 0 ? format_fixed(measured / predicted, 2) : "-";
}

// The op class of a simulated op, by the Device op name the trace records (runtime/cost.cpp's classes).
std::string op_class_of(const std::string& op) {
  if (op == "gemm" || op == "linear" || op == "linear_backward") return "gemm";
  if (op == "softmax" || op == "softmax_backward") return "softmax";
  if (op == "attention_block_forward") return "attention_forward";
  if (op == "attention_block_backward") return "attention_backward";
  if (op == "slice" || op == "slice_assign" || op == "copy" || op == "concat" || op == "permute" ||
      op == "fill")
    return "copy";
  return "elementwise";
}

}  // namespace

std::vector<ComparedPhase> compared_phases(const std::vector<PhaseRow>& rows, const SimSummary& s) {
  auto median = [&](const std::string& key) {
    for (const auto& r : rows)
      if (r.key == key) return r.spread.median;
    return 0.0;
  };
  std::vector<ComparedPhase> out{{"forward", median("forward"), s.forward_s},
                                 {"backward", median("backward"), s.backward_s},
                                 {"step (forward + backward)", median("step"), s.step_time_s},
                                 {"compute", median("compute"), s.compute_s}};
  // Per op class: the simulated ops of the critical rank (top_ops; communication entries excluded).
  std::map<std::string, double> predicted;
  for (const auto& op : s.top_ops)
    if (op.name.find("(comm)") == std::string::npos) predicted[op_class_of(op.name)] += op.time_s;
  for (const auto& r : rows)
    if (r.key.rfind("op:", 0) == 0) {
      const std::string cls = r.key.substr(3);
      out.push_back({"  " + cls, r.spread.median, predicted.count(cls) ? predicted[cls] : 0.0});
    }
  out.push_back({"communication (exposed)", median("communication"), s.exposed_comm_s});
  return out;
}

Prediction predict_run(const Config& config) {
  Prediction p;
  if (!config.cluster) {
    p.note =
        "no cluster to simulate: pass --cluster FILE.json (e.g. written by spsim calibrate) or give the "
        "config a cluster section";
    return p;
  }
  try {
    const sim::Cluster cluster(*config.cluster);
    p.cluster = cluster.config().name + " (" + cluster.config().gpu.name + ")";
    const auto gpus = static_cast<int>(cluster.gpus().size());
    if (gpus < config.world()) {
      p.note = "the cluster " + p.cluster + " has " + std::to_string(gpus) + " devices, the run has " +
               std::to_string(config.world()) + " ranks";
      return p;
    }
    p.summary = simulate(config);
    p.available = true;
  } catch (const std::exception& e) {
    p.note = std::string("simulation failed: ") + e.what();
  }
  return p;
}

std::string render_run(const RunMeasurement& m, const Prediction& p) {
  const std::string layer = m.layer.empty() ? "" : "layer " + m.layer + ", tp = " + std::to_string(m.tp) + ", ";
  std::string out = "spsim run: " + m.config_name + "\n" + layer + "strategy " + m.strategy + " (" +
                    options_text(m.options) + (layer.empty() ? "), P = " : "), cp = ") +
                    std::to_string(m.ranks / m.tp) + ", scope " +
                    (m.scope == models::Scope::layer ? "layer" : "attention") + ", " +
                    std::string(rt::dtype_name(m.dtype)) + ", device " + m.device + ", comm " + m.comm +
                    "\n" + std::to_string(m.run.iters) + " timed iterations after " +
                    std::to_string(m.run.warmup) + " warm-up; each iteration counts its slowest rank\n\n";
  Table t({{"phase", Align::left},
           {"median", Align::right},
           {"min", Align::right},
           {"max", Align::right},
           {"slowest rank", Align::right},
           {"calls/iter", Align::right},
           {"bytes/iter", Align::right}});
  const auto rows = phase_rows(m);
  for (const auto& r : rows)
    t.add_row({r.name, format_seconds(r.spread.median), format_seconds(r.spread.min),
               format_seconds(r.spread.max), std::to_string(r.slowest_rank),
               r.calls > 0 ? format_fixed(r.calls, 0) : "",
               r.key.rfind("comm:", 0) == 0 ? format_bytes(r.bytes) : ""});
  out += t.to_text();
  if (m.verify) {
    std::string v = render_check(*m.verify);
    const std::string title = "spsim check: ";
    if (v.rfind(title, 0) == 0) v = "verification (as spsim check): " + v.substr(title.size());
    out += "\n" + v;
  }
  out += "\n";
  if (!p.available) return out + "prediction: none (" + p.note + ")\n";
  out += "measured (median) vs predicted on " + p.cluster + ":\n";
  Table c({{"phase", Align::left},
           {"measured", Align::right},
           {"predicted", Align::right},
           {"measured/predicted", Align::right}});
  for (const auto& x : compared_phases(rows, p.summary))
    c.add_row({x.name, format_seconds(x.measured), format_seconds(x.predicted),
               ratio_text(x.measured, x.predicted)});
  return out + c.to_text();
}

}  // namespace spsim::analysis
