// The RSA backward report: checks, sweeps, plots and the Markdown that ties them to the three questions.
#include "analysis/report/rsa_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace fs = std::filesystem;

const std::vector<std::string>& rsa_variants() {
  static const std::vector<std::string> v = {"allreduce_slice_div", "allreduce_slice", "reduce_scatter",
                                             "ring"};
  return v;
}

namespace {

constexpr int check_degrees[] = {2, 4, 8};

// ---- collecting -----------------------------------------------------------------------------------

std::vector<CheckCell> run_checks(const fs::path& check_config) {
  const Config base = load_config(check_config);
  std::vector<CheckCell> out;
  for (const auto& variant : rsa_variants())
    for (int p : check_degrees) {
      const std::vector<SweepValue> values = {
          {"strategy.degree", std::to_string(p), "", std::nullopt},
          {"strategy.options.grad_reduction", "\"" + variant + "\"", "", std::nullopt}};
      out.push_back({variant, p, run_check(config_with(base, values))});
    }
  return out;
}

constexpr int tp_check_sizes[] = {2, 4};

std::vector<TpCheckCell> run_tp_checks(const fs::path& check_config) {
  if (check_config.empty()) return {};
  const Config base = load_config(check_config);
  if (base.layer.name != "megatron_sp" || base.layer.options.at("sequence_parallel") != "false")
    throw InputError(check_config.string(), "the tensor-parallel contrast needs a megatron_sp layer with "
                                            "sequence_parallel false (the column-parallel dX all-reduce)");
  std::vector<TpCheckCell> out;
  for (const char* reduction : {"sum", "sum_div"})
    for (int tp : tp_check_sizes) {
      const std::vector<SweepValue> values = {
          {"parallel.tp", std::to_string(tp), "", std::nullopt},
          {"layer.options.dx_reduction", std::string("\"") + reduction + "\"", "", std::nullopt}};
      out.push_back({reduction, tp, run_check(config_with(base, values))});
    }
  return out;
}

void require_axes(const Config& c) {
  for (const char* path : {"strategy.options.grad_reduction", "workload.seq_len", "model.preset"})
    if (std::none_of(c.sweep.begin(), c.sweep.end(), [&](const SweepAxis& a) { return a.path == path; }))
      throw InputError(c.source.string(), std::string("the report needs a sweep over ") + path);
}

// ---- reading results ------------------------------------------------------------------------------

std::string value_of(const CompareRow& r, const std::string& path) {
  for (const auto& v : r.values)
    if (v.path == path) return v.text;
  return "";
}

const CompareRow* find_row(const CompareResult& e, const std::string& preset, const std::string& seq,
                           const std::string& variant) {
  for (const auto& r : e.rows)
    if (value_of(r, "model.preset") == preset && value_of(r, "workload.seq_len") == seq &&
        value_of(r, "strategy.options.grad_reduction") == variant)
      return &r;
  return nullptr;
}

// Values of one axis in sweep order, without repeats.
std::vector<std::string> axis_values(const CompareResult& e, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& r : e.rows) {
    const auto v = value_of(r, path);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

double kind_bytes(const CompareRow& r, const std::string& kind) {
  auto it = r.sim->bytes_sent_by_kind.find(kind);
  return it == r.sim->bytes_sent_by_kind.end() ? 0 : it->second;
}

// Bytes one rank sends for the dK and dV reductions. The ring passes of K and V (forward and
// backward) are the same in every variant: they are the p2p bytes of the all-reduce variants.
double reduction_bytes(const CompareResult& e, const CompareRow& r) {
  const std::string variant = value_of(r, "strategy.options.grad_reduction");
  if (variant == "reduce_scatter") return kind_bytes(r, "reduce_scatter");
  if (variant != "ring") return kind_bytes(r, "all_reduce");
  const CompareRow* ar =
      find_row(e, value_of(r, "model.preset"), value_of(r, "workload.seq_len"), "allreduce_slice");
  return ar && ar->ok() ? kind_bytes(r, "sendrecv") - kind_bytes(*ar, "sendrecv") : 0;
}

std::string seq_text(const std::string& seq) {
  const long v = std::stol(seq);
  return v % 1024 == 0 ? std::to_string(v / 1024) + "K" : seq;
}

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double x) { lo = std::min(lo, x), hi = std::max(hi, x); }
  [[nodiscard]] bool empty() const { return lo > hi; }
};

std::string range_percent(const Range& r) {
  if (r.empty()) return "n/a";
  const Range pct{100 * r.lo, 100 * r.hi};
  std::string lo = format_fixed(pct.lo, 1) + "%", hi = format_fixed(pct.hi, 1) + "%";
  return lo == hi ? lo : lo + " to " + hi;
}

std::string range_text(const Range& r, int digits, const std::string& unit = "") {
  if (r.empty()) return "n/a";
  if (format_fixed(r.lo, digits) == format_fixed(r.hi, digits)) return format_fixed(r.lo, digits) + unit;
  return format_fixed(r.lo, digits) + unit + " to " + format_fixed(r.hi, digits) + unit;
}

// ---- rendering ------------------------------------------------------------------------------------

const TensorCheck* tensor(const CheckResult& r, const std::string& name) {
  for (const auto& t : r.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string check_section(const ReportData& d) {
  Table t({{"grad_reduction", Align::left},
           {"P", Align::right},
           {"verdict", Align::left},
           {"dWq α", Align::right},
           {"dWk α", Align::right},
           {"dWo α", Align::right},
           {"failing tensors", Align::left},
           {"dX", Align::left}});
  for (const auto& c : d.checks) {
    std::vector<std::string> failing;
    for (const auto& x : c.result.tensors)
      if (!x.cmp.pass) failing.push_back(x.name);
    std::string fail_text;
    for (const auto& f : failing) fail_text += (fail_text.empty() ? "" : ", ") + f;
    auto alpha = [&](const char* n) {
      const auto* x = tensor(c.result, n);
      return x ? format_fixed(x->cmp.alpha, 4) : "-";
    };
    const auto* dx = tensor(c.result, "dX");
    t.add_row({c.variant, std::to_string(c.degree), c.result.pass() ? "PASS" : "FAIL", alpha("dWq"),
               alpha("dWk"), alpha("dWo"), fail_text.empty() ? "none" : fail_text,
               dx ? (dx->cmp.pass ? "exact" : dx->cmp.diagnosis) : "-"});
  }
  std::string out = "## (a) Gradient check\n\n";
  if (!d.checks.empty()) {
    const auto& r = d.checks.front().result;
    out += "One pre-LN transformer layer (`scope: layer`, the shapes of `" + r.config_name + "`), " +
           std::string(rt::dtype_name(r.dtype)) +
           ", on P CPU ranks\n(threads backend) against the single-device "
           "reference; tolerance " +
           format_scientific(r.tolerance, 1) +
           " on the relative error.\n"
           "α is the best-fit scale ⟨g, g_ref⟩/⟨g_ref, g_ref⟩.\n\n";
  }
  return out + t.to_markdown() + "\n";
}

std::string tp_check_section(const ReportData& d) {
  if (d.tp_checks.empty()) return "";
  Table t({{"dx_reduction", Align::left},
           {"tp", Align::right},
           {"verdict", Align::left},
           {"dLN2.gamma α", Align::right},
           {"dLN1.gamma α", Align::right},
           {"dWq α", Align::right},
           {"dW1 α", Align::right},
           {"failing tensors", Align::right},
           {"dX", Align::left}});
  for (const auto& c : d.tp_checks) {
    int failing = 0;
    for (const auto& x : c.result.tensors) failing += x.cmp.pass ? 0 : 1;
    auto alpha = [&](const char* n) {
      const auto* x = tensor(c.result, n);
      return x ? format_fixed(x->cmp.alpha, 4) : "-";
    };
    const auto* dx = tensor(c.result, "dX");
    t.add_row({c.dx_reduction, std::to_string(c.tp), c.result.pass() ? "PASS" : "FAIL", alpha("dLN2.gamma"),
               alpha("dLN1.gamma"), alpha("dWq"), alpha("dW1"),
               std::to_string(failing) + " of " + std::to_string(c.result.tensors.size()),
               dx ? (dx->cmp.pass ? "exact" : dx->cmp.diagnosis) : "-"});
  }
  const auto& r = d.tp_checks.front().result;
  return "## (c) Gradient check: column-parallel tensor parallelism, with and without a ÷tp\n\n"
         "The same pre-LN layer split Megatron's way (`layer: megatron_sp`, `sequence_parallel: false`, the\n"
         "shapes of `" +
         r.config_name +
         "`): Q/K/V and W1 column-parallel, Wo and W2 row-parallel over tp ranks, each\n"
         "column-parallel block's input gradient all-reduced over the TP group (`dx_reduction: sum`), or that\n"
         "all-reduce divided by tp (`sum_div`, the ÷ RSA applies, here on purpose); " +
         std::string(rt::dtype_name(r.dtype)) + ", tolerance " + format_scientific(r.tolerance, 1) +
         ".\n\n" + t.to_markdown() + "\n";
}

std::string experiment_title(const Config& c) {
  const std::string cluster = c.cluster ? c.cluster->name : "custom";
  const int nodes = c.cluster ? c.cluster->nodes : 1;
  return (nodes > 1 ? std::to_string(nodes) + " × " : "") + cluster +
         ", P = " + std::to_string(c.strategy.degree);
}

std::string experiment_section(const ReportData& d, std::size_t i, const std::vector<std::string>& plots) {
  const CompareResult& e = d.experiments[i];
  const Config& c = d.configs[i];
  Table t({{"model", Align::left},
           {"seq", Align::right},
           {"grad_reduction", Align::left},
           {"dK+dV reduction sent", Align::right},
           {"total sent", Align::right},
           {"step (sim)", Align::right},
           {"closed form", Align::right},
           {"sim/closed", Align::right},
           {"exposed comm", Align::right},
           {"peak mem", Align::right},
           {"full dK/dV buffer", Align::right},
           {"OOM", Align::left}});
  for (const auto& preset : axis_values(e, "model.preset"))
    for (const auto& seq : axis_values(e, "workload.seq_len"))
      for (const auto& variant : rsa_variants()) {
        const CompareRow* r = find_row(e, preset, seq, variant);
        if (!r) continue;
        if (!r->ok()) {
          t.add_row({preset, seq_text(seq), variant, "-", "-", "-", "-", "-", "-", "-", "-", r->error});
          continue;
        }
        const auto ratio = r->closed_ratio();
        t.add_row({preset, seq_text(seq), variant, format_bytes(reduction_bytes(e, *r)),
                   format_bytes(r->sim->bytes_sent_max), format_seconds(r->sim->step_time_s),
                   r->closed ? format_seconds(r->closed->step_s) : "n/a",
                   ratio ? format_fixed(*ratio, 3) : "n/a", format_seconds(r->sim->exposed_comm_s),
                   format_bytes(static_cast<double>(r->sim->peak_memory_bytes)),
                   r->memory ? format_bytes(r->memory->full_grad_buffer_bytes) : "n/a",
                   r->sim->oom ? "OOM" : "no"});
      }
  std::string out = "### " + experiment_title(c) + " (`" + c.source.filename().string() + "`)\n\n";
  out += t.to_markdown() + "\n";
  for (const auto& p : plots) out += "![step time vs sequence length](" + p + ")\n\n";
  return out;
}

// The numbers the answers quote, aggregated over every experiment.
struct Findings {
  std::map<int, double> div_alpha;  // P -> dWq α of allreduce_slice_div
  bool exact_variants_pass = true;
  bool div_fails = true;
  Range rs_over_ar_bytes, ring_over_rs_bytes;  // reduction bytes
  Range rs_saving, ring_vs_rs;                 // step-time: 1 − rs/ar, ring/rs − 1
  Range buffer_over_chunk;                     // full-length buffer / ring's chunk = P
  Range ring_peak_saving;                      // 1 − ring peak / rs peak
  Range rs_peak_saving;                        // 1 − rs peak / ar peak
  Range score_over_buffer;                     // S / F
  Range closed_ratio;
  int oom_rs = 0, oom_ring = 0, oom_rs_only = 0;
};

Findings findings(const ReportData& d) {
  Findings f;
  for (const auto& c : d.checks) {
    if (c.variant == "allreduce_slice_div") {
      if (const auto* x = tensor(c.result, "dWq")) f.div_alpha[c.degree] = x->cmp.alpha;
      f.div_fails = f.div_fails && !c.result.pass();
    } else {
      f.exact_variants_pass = f.exact_variants_pass && c.result.pass();
    }
  }
  for (std::size_t i = 0; i < d.experiments.size(); ++i) {
    const auto& e = d.experiments[i];
    const double p = d.configs[i].strategy.degree;
    for (const auto& preset : axis_values(e, "model.preset"))
      for (const auto& seq : axis_values(e, "workload.seq_len")) {
        const auto *ar = find_row(e, preset, seq, "allreduce_slice"),
                   *rs = find_row(e, preset, seq, "reduce_scatter"), *ring = find_row(e, preset, seq, "ring");
        if (!ar || !rs || !ring || !ar->ok() || !rs->ok() || !ring->ok()) continue;
        f.rs_over_ar_bytes.add(reduction_bytes(e, *rs) / reduction_bytes(e, *ar));
        f.ring_over_rs_bytes.add(reduction_bytes(e, *ring) / reduction_bytes(e, *rs));
        f.rs_saving.add(1 - rs->sim->step_time_s / ar->sim->step_time_s);
        f.ring_vs_rs.add(ring->sim->step_time_s / rs->sim->step_time_s - 1);
        f.rs_peak_saving.add(1 - static_cast<double>(rs->sim->peak_memory_bytes) /
                                     static_cast<double>(ar->sim->peak_memory_bytes));
        f.ring_peak_saving.add(1 - static_cast<double>(ring->sim->peak_memory_bytes) /
                                       static_cast<double>(rs->sim->peak_memory_bytes));
        if (rs->memory && rs->memory->full_grad_buffer_bytes > 0) {
          f.buffer_over_chunk.add(p);
          f.score_over_buffer.add(rs->memory->score_rows_bytes / rs->memory->full_grad_buffer_bytes);
        }
        f.oom_rs += rs->sim->oom ? 1 : 0;
        f.oom_ring += ring->sim->oom ? 1 : 0;
        f.oom_rs_only += rs->sim->oom && !ring->sim->oom ? 1 : 0;
      }
    for (const auto& r : e.rows)
      if (auto x = r.closed_ratio()) f.closed_ratio.add(*x);
  }
  return f;
}

std::string answers(const ReportData& d) {
  const Findings f = findings(d);
  std::string alphas;
  for (const auto& [p, a] : f.div_alpha)
    alphas += (alphas.empty() ? "" : ", ") + format_fixed(a, 4) + " at P = " + std::to_string(p);
  std::ostringstream o;
  o << "## Answers\n\n"
    << "**1. Is the ÷P in RSA's backward right?** No. The all-reduce already returns the exact sum of every\n"
    << "rank's partial dK/dV, so slicing it gives the exact gradient; dividing by P (and dividing dQ by P)\n"
    << "makes the Q/K/V projection gradients exactly 1/P of the truth. The check measures the best-fit "
       "scale\n"
    << "of dWq as " << alphas << " (= 1/P),\n"
    << (f.div_fails ? "so `allreduce_slice_div` fails at every P"
                    : "yet `allreduce_slice_div` passed somewhere")
    << ", while the same code without the division (`allreduce_slice`),\n`reduce_scatter` and `ring` "
    << (f.exact_variants_pass ? "pass at every P" : "do NOT all pass")
    << ". The output projection, the MLP and the\n"
    << "second LayerNorm stay exact; dX is wrong by no uniform factor (table (a)). The division is the mean\n"
    << "of a sum that was already the right quantity: unlike data parallelism, the ranks hold different\n"
    << "tokens of one sequence, not replicas of one gradient.\n\n";
  o << "**2. All-reduce-then-slice or reduce-scatter?** Reduce-scatter. It yields the same exact gradient,\n"
    << "and each rank sends " << range_text(f.rs_over_ar_bytes, 3, "×")
    << " the all-reduce's bytes for the dK/dV reductions\n(ring all-reduce: 2(P−1)/P·n per rank; ring "
    << "reduce-scatter: (P−1)/P·n). In the simulated steps that saves\n"
    << (f.rs_saving.empty() || f.rs_saving.lo >= 0
            ? range_percent(f.rs_saving)
            : "up to " + format_fixed(100 * f.rs_saving.hi, 1) + "% (and costs at most " +
                  format_fixed(-100 * f.rs_saving.lo, 1) +
                  "% where a small reduction across nodes, run as a ring, loses to the all-reduce's tree)")
    << " of the all-reduce variant's step time: the reductions are a small part of a step dominated by\n"
    << "the score-row GEMMs and the softmax. Its peak memory is " << range_percent(f.rs_peak_saving)
    << " lower: both\nmaterialise the full-length dK/dV partial sum (and reduce-scatter packs it into a "
       "staging "
    << "copy while it runs:\nits chunks along s are strided), but the sliced chunk of all-reduce-then-slice "
       "is a "
    << "view that keeps\nthe full-length dV buffer alive through the rest of the backward.\n\n";
  o << "**3. Is a ring pass worth it?** For RSA as written, not for speed. The ring sends the same bytes as\n"
    << "reduce-scatter (" << range_text(f.ring_over_rs_bytes, 3, "×")
    << ") and overlaps each pass with computing the next partial gradient,\nand its gradient "
    << "buffer is one chunk instead of the full length: " << range_text(f.buffer_over_chunk, 0, "×")
    << "\nsmaller. But its simulated step takes " << range_percent(f.ring_vs_rs)
    << " longer than reduce-scatter's (P small key-gradient\nGEMMs and slice copies instead of one large "
       "GEMM, "
    << "and compute slowed while the passes run), and its\npeak memory is only "
    << range_percent(f.ring_peak_saving) << " lower, because RSA's s/P × s score rows are "
    << range_text(f.score_over_buffer, 0, "×")
    << "\nthe size of the full-length buffer (S/F = (H/H_kv)·(s/P)/d). Points out of memory: " << f.oom_rs
    << " with reduce-scatter,\n"
    << f.oom_ring << " with ring, " << f.oom_rs_only
    << " where only reduce-scatter is. The ring's memory advantage matters where the gradient\nbuffer "
    << "dominates: fused attention without score rows (Ring Attention), or s/P near the head dimension.\n\n";
  if (!d.tp_checks.empty()) {
    std::string sum_verdict = "passes", div_alphas;
    for (const auto& c : d.tp_checks) {
      if (c.dx_reduction == "sum" && !c.result.pass()) sum_verdict = "does NOT pass everywhere";
      if (c.dx_reduction == "sum_div")
        if (const auto* x = tensor(c.result, "dLN2.gamma"))
          div_alphas += (div_alphas.empty() ? "" : ", ") + format_fixed(x->cmp.alpha, 4) + " at tp = " +
                        std::to_string(c.tp);
    }
    o << "**4. Why does column-parallel tensor parallelism all-reduce dX without dividing?** Because its\n"
      << "partial input gradients are the terms of one sum too. Rank t holds the output features t of a\n"
      << "column-parallel linear, Y_t = X W_tᵀ, so dX = Σ_t dY_t W_t: each rank's dY_t W_t is the part of\n"
      << "the sum over the output (hidden) dimension that its slice owns, and the all-reduce adds the parts.\n"
      << "RSA's all-reduce is the same kind of sum, over the query chunks: dK_j = Σ_i dS_ijᵀ Q_i, one term\n"
      << "per rank i. Neither is a mean. Megatron's layer with the plain all-reduce " << sum_verdict
      << " at tp = 2 and 4\n(table (c); its sequence-parallel and TP × CP layouts pass too, "
      << "tests/strategies/megatron_test.cpp); dividing\nthe all-reduce by tp makes the gradients that flow "
      << "only through it exactly "
      << "1/tp of the truth (dLN2.gamma: " << div_alphas << ")\nand every gradient before it wrong by no "
      << "uniform factor, the pattern RSA's ÷P leaves. Data parallelism is\nthe other case: each replica "
      << "computes the whole gradient of its own micro-batch's loss, and the mean\nover replicas (÷dp after "
      << "the all-reduce, or ReduceOp.AVG) is the gradient of the mean loss over the\nglobal batch: a "
      << "uniform scale taken on purpose, the same for every weight, where RSA's and the\n÷tp variant's "
      << "fall on some gradients and not others.\n\n";
  }
  o << "The closed-form α-β-γ model (strategies/rsa/closed_form.cpp) reproduces the simulated step within "
    << range_text(f.closed_ratio, 3) << " (sim / closed form) over every point below.\n\n";
  return o.str();
}

LinePlot model_plot(const CompareResult& e, const Config& c, const std::string& preset) {
  LinePlot plot;
  plot.title = "RSA " + preset + ", " + experiment_title(c);
  plot.x_label = "sequence length (tokens)";
  plot.y_label = "step time (ms)";
  plot.log_x = plot.log_y = true;
  for (const auto& variant : rsa_variants()) {
    PlotSeries s{variant, {}};
    for (const auto& seq : axis_values(e, "workload.seq_len"))
      if (const CompareRow* r = find_row(e, preset, seq, variant); r && r->ok())
        s.points.emplace_back(std::stod(seq), r->sim->step_time_s * 1e3);
    if (!s.points.empty()) plot.series.push_back(std::move(s));
  }
  return plot;
}

}  // namespace

ReportData collect_report(const std::vector<Config>& experiments, const ReportOptions& options) {
  ReportData d;
  for (const auto& c : experiments) require_axes(c);
  d.checks = run_checks(options.check_config);
  d.tp_checks = run_tp_checks(options.tp_check_config);
  CompareOptions co;
  co.jobs = options.jobs;
  co.simulate = options.simulate;
  for (const auto& c : experiments) {
    d.experiments.push_back(run_compare(c, co));
    d.configs.push_back(c);
  }
  return d;
}

std::string render_report(const ReportData& d, const std::vector<std::vector<std::string>>& plot_files,
                          const std::string& command) {
  std::string out =
      "# RSA backward: is ÷P right, all-reduce or reduce-scatter, and is a ring pass worth it?\n\n"
      "ColossalAI's Ring Self-Attention all-reduces the full-length dK and dV in backward, slices out the\n"
      "local chunk and divides by the sequence-parallel world size P (and divides dQ by P too). This report\n"
      "checks that choice and its alternatives with spsim: a gradient check on CPU ranks, the same check\n"
      "of column-parallel tensor parallelism (whose backward all-reduces dX and divides by nothing), and\n"
      "the simulated cost of each variant on DGX A100 clusters.\n\n"
      "Generated by `" +
      command + "`; do not edit by hand (a test fails when it is stale).\n\n";
  out += answers(d);
  out += check_section(d);
  out +=
      "\n## (b) Bytes, time and memory on DGX A100\n\n"
      "Attention core (`scope: attention`), batch 1, bf16, no causal mask, forward + backward, per rank.\n"
      "dK+dV reduction sent: bytes one rank sends for the two key-side reductions; total sent adds the\n"
      "ring passes of K and V (the same in every variant). Exposed comm: communication no compute hides.\n"
      "Peak mem: the simulator's per-rank peak of live tensors (OOM against 80 GB); full dK/dV buffer:\n"
      "the full-length partial sum the variant allocates (strategies/rsa/memory.cpp).\n\n";
  for (std::size_t i = 0; i < d.experiments.size(); ++i)
    out += experiment_section(d, i, i < plot_files.size() ? plot_files[i] : std::vector<std::string>{});
  out += tp_check_section(d);
  out +=
      "## How the numbers are made\n\n"
      "* Gradients: real float64 math on P threads, compared tensor by tensor with a single-device "
      "reference\n"
      "  that finite differences verify (`spsim check`).\n"
      "* Time: the same strategy code traced per rank and replayed on the simulated cluster: roofline\n"
      "  compute per op with per-class efficiencies from the GPU file, flow-level network, NCCL-style\n"
      "  collectives with the protocol costs of NCCL 2.20, compute slowed 10% while communication runs\n"
      "  (`spsim simulate`). The closed form re-derives the same step from α-β-γ formulas by hand.\n"
      "* Memory: live tensors of the trace (inputs, activations kept for backward, buffers); NCCL's\n"
      "  fixed-size staging buffers and the CUDA context are not counted.\n"
      "* Hardware: configs/clusters/dgx-a100.json (A100-SXM4-80GB, NVLink3 through NVSwitch, one HDR\n"
      "  InfiniBand NIC per GPU across nodes).\n";
  return out;
}

std::vector<fs::path> write_report(const std::vector<Config>& experiments, const ReportOptions& options) {
  const ReportData d = collect_report(experiments, options);
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) throw InputError("--out", "cannot create '" + options.out_dir.string() + "': " + ec.message());
  std::vector<fs::path> written;
  std::vector<std::vector<std::string>> plots(d.experiments.size());
  if (options.plots)
    for (std::size_t i = 0; i < d.experiments.size(); ++i)
      for (const auto& preset : axis_values(d.experiments[i], "model.preset")) {
        const std::string name = d.configs[i].name + "-" + preset + ".svg";
        write_line_plot(model_plot(d.experiments[i], d.configs[i], preset), options.out_dir / name, "--out");
        plots[i].push_back(name);
        written.push_back(options.out_dir / name);
      }
  const fs::path readme = options.out_dir / "README.md";
  std::ofstream(readme, std::ios::binary) << render_report(d, plots, options.command);
  written.push_back(readme);
  return written;
}

}  // namespace spsim::analysis
