// `spsim validate` and the kernel-model fit (see the header).
#include "analysis/validate/validate.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "analysis/config/hardware.hpp"
#include "analysis/report/table.hpp"
#include "analysis/simulate/collective.hpp"
#include "analysis/simulate/simulate.hpp"
#include "runtime/core/error.hpp"
#include "runtime/cost.hpp"
#include "sim/compute/compute_model.hpp"

namespace spsim::analysis {

namespace {

bool has_forward(const std::string& pass) {
  return pass != "bwd";
}
bool has_backward(const std::string& pass) {
  return pass != "fwd";
}

// The FlashAttention papers' FLOP count of a row: 4·s²·d·h·b forward (2·s²·(d + dv)·h·b when dv ≠ d),
// halved under causal; backward 2.5×, forward+backward 3.5× the forward.
double row_flops(const ValidationRow& r) {
  const double s = static_cast<double>(r.seq_len);
  double fwd =
      2 * s * s * static_cast<double>(r.head_dim + r.head_dim_v) * static_cast<double>(r.heads * r.batch);
  if (r.causal) fwd /= 2;
  const double factor = r.pass == "fwd" ? 1.0 : r.pass == "bwd" ? 2.5 : 3.5;
  return fwd * factor;
}

double attention_row_seconds(const ValidationRow& r, const sim::ComputeModel& model) {
  const rt::Shape q{r.batch * r.heads, r.seq_len, r.head_dim}, k{r.batch * r.kv_heads, r.seq_len, r.head_dim},
      v{r.batch * r.kv_heads, r.seq_len, r.head_dim_v};
  const rt::Positions positions = rt::Positions::range(0, r.seq_len);
  const rt::Mask mask{r.causal, &positions, &positions};
  double t = 0;
  const auto add = [&](const rt::OpCost& c) {
    t += model.duration_s(c.op_class, c.flops, static_cast<double>(c.bytes()), c.kernels);
  };
  if (has_forward(r.pass)) add(rt::cost::attention_forward(q, k, v, r.dtype, mask));
  if (has_backward(r.pass)) add(rt::cost::attention_backward(q, k, v, r.dtype, mask));
  return t;
}

double gemm_row_seconds(const ValidationRow& r, const sim::ComputeModel& model) {
  const rt::OpCost c =
      rt::cost::gemm({r.m, r.k}, {r.k, r.n}, {r.m, r.n}, rt::Trans::N, rt::Trans::N, r.dtype, false);
  return model.duration_s(c.op_class, c.flops, static_cast<double>(c.bytes()), c.kernels);
}

double mape(const std::vector<double>& errors) {
  if (errors.empty()) return 0;
  double s = 0;
  for (double e : errors) s += std::abs(e);
  return s / static_cast<double>(errors.size());
}

std::string percent(double fraction, int digits = 1) {
  return format_fixed(100 * fraction, digits) + "%";
}

std::string value_text(double v) {
  return format_fixed(v, v >= 100 ? 1 : 2);
}

}  // namespace

double predict_kernel_row(const ValidationRow& row, const sim::GpuSpec& gpu) {
  const std::string where = "row " + row.id;
  const sim::ComputeModel model(gpu, row.dtype, where + ".dtype", row.kernel, where + ".kernel");
  if (row.m > 0)
    return 2.0 * static_cast<double>(row.m * row.n) * static_cast<double>(row.k) /
           gemm_row_seconds(row, model) / 1e12;
  const double t = attention_row_seconds(row, model);
  return row.unit == "it/s" ? 1 / t : row_flops(row) / t / 1e12;
}

ValidationReport run_validation(const ValidateOptions& options) {
  ValidationReport report;
  report.groups = load_validation(options.dir);
  if (!options.groups.empty()) {
    std::string names;
    for (const auto& g : report.groups) names += (names.empty() ? "" : ", ") + g.name;
    for (const auto& want : options.groups)
      if (std::ranges::none_of(report.groups, [&](const ValidationGroup& g) { return g.name == want; }))
        throw InputError("--group", "no validation group '" + want + "'; valid choices: " + names);
    std::erase_if(report.groups, [&](const ValidationGroup& g) {
      return std::ranges::find(options.groups, g.name) == options.groups.end();
    });
  }
  std::map<std::string, sim::GpuSpec> gpus;
  const auto gpu = [&](const ValidationRow& r) -> const sim::GpuSpec& {
    auto it = gpus.find(r.gpu);
    if (it == gpus.end()) it = gpus.emplace(r.gpu, load_gpu(r.gpu, "row " + r.id + ".gpu")).first;
    return it->second;
  };
  for (const auto& g : report.groups) {
    GroupResult res;
    res.group = &g;
    std::vector<double> cal, val;
    for (const auto& r : g.rows) {
      RowResult rr;
      rr.row = &r;
      try {
        if (g.kind == ValidationKind::distributed) {
          const SimSummary s = simulate(*r.config, SimulateOptions::without_trace_file());
          const double t = r.phase == "forward" ? s.forward_s : r.phase == "backward" ? s.backward_s : s.step_time_s;
          rr.predicted = r.unit == "ms" ? 1e3 * t : 1 / t;
        } else if (g.kind == ValidationKind::collective) {
          const sim::Cluster cluster(*r.cluster);
          try {
            rr.predicted =
                simulate_collective_row(cluster, r.network, r.op, r.bytes, r.algo, r.protocol).busbw_GBps;
          } catch (const InputError& e) {  // the simulator's "algorithm" is the row's "algo"
            throw e.where() == "algorithm" ? e.at("algo") : e;
          }
        } else {
          rr.predicted = predict_kernel_row(r, gpu(r));
        }
      } catch (const InputError& e) {  // name the file and the row, then what the model said
        const auto index = static_cast<std::size_t>(&r - g.rows.data());
        throw InputError(g.file.string() + ": rows[" + std::to_string(index) + "] (" + e.where() + ")",
                         e.message());
      }
      rr.error = rr.predicted / r.measured - 1;
      rr.held = !r.calibration && (g.kind != ValidationKind::attention_kernel || r.seq_len >= g.min_seq_len);
      (r.calibration ? cal : val).push_back(rr.error);
      res.rows.push_back(rr);
    }
    std::vector<double> held;
    for (const auto& rr : res.rows)
      if (rr.held)
        held.push_back(rr.error), res.validation_max = std::max(res.validation_max, std::abs(rr.error));
    res.calibration_rows = static_cast<int>(cal.size());
    res.validation_rows = static_cast<int>(held.size());
    res.calibration_mape = mape(cal);
    res.validation_mape = mape(held);
    if (res.validation_mape > g.tolerance_mape) {
      res.pass = false;
      res.failure = "validation MAPE " + percent(res.validation_mape) + " > " + percent(g.tolerance_mape);
    }
    if (g.tolerance_max && res.validation_max > *g.tolerance_max) {
      res.pass = false;
      res.failure += (res.failure.empty() ? "" : "; ") + std::string("largest validation error ") +
                     percent(res.validation_max) + " > " + percent(*g.tolerance_max);
    }
    const auto find = [&](const std::string& id) {
      return *std::ranges::find_if(res.rows, [&](const RowResult& rr) { return rr.row->id == id; });
    };
    for (const auto& ratio : g.ratios) {
      const RowResult& num = find(ratio.num);
      const RowResult& den = find(ratio.den);
      RatioResult rr{&ratio, num.row->measured / den.row->measured, num.predicted / den.predicted, 0, false};
      rr.error = rr.predicted / rr.measured - 1;
      rr.pass = std::abs(rr.error) <= ratio.tolerance;
      if (!rr.pass) {
        res.pass = false;
        res.failure += (res.failure.empty() ? "" : "; ") + ratio.name + " off by " + percent(rr.error);
      }
      res.ratios.push_back(rr);
    }
    report.pass = report.pass && res.pass;
    report.results.push_back(std::move(res));
  }
  return report;
}

std::string render_validation(const ValidationReport& report) {
  std::string out;
  Table summary({{"group"},
                 {"rows", Align::right},
                 {"calibration MAPE", Align::right},
                 {"validation MAPE", Align::right},
                 {"max |error|", Align::right},
                 {"tolerance", Align::right},
                 {"result"}});
  for (const auto& res : report.results) {
    const auto& g = *res.group;
    out += "## " + g.name + ": " + g.description + "\n";
    out += "source: " + g.source + "\n";
    Table t(
        {{"row"}, {"use"}, {"measured", Align::right}, {"predicted", Align::right}, {"error", Align::right}});
    for (const auto& rr : res.rows)
      t.add_row({rr.row->id,
                 std::string(rr.row->calibration ? "calibration"
                             : rr.held           ? "validation"
                                                 : "validation*"),
                 value_text(rr.row->measured) + " " + rr.row->unit, value_text(rr.predicted),
                 percent(rr.error)});
    out += t.to_text();
    for (const auto& r : res.ratios)
      out += "ratio " + r.ratio->name + ": measured " + format_fixed(r.measured, 3) + ", predicted " +
             format_fixed(r.predicted, 3) + " (" + percent(r.error) + ", tolerance " +
             percent(r.ratio->tolerance) + ")" + (r.pass ? "" : "  FAIL") + "\n";
    if (std::ranges::any_of(res.rows, [](const RowResult& rr) { return !rr.row->calibration && !rr.held; }))
      out += "validation*: below the group's min_seq_len " + std::to_string(g.min_seq_len) +
             ", reported but not held to the tolerance\n";
    out += "\n";
    const std::string tol = "MAPE <= " + percent(g.tolerance_mape, 0) +
                            (g.tolerance_max ? ", each <= " + percent(*g.tolerance_max, 0) : std::string());
    summary.add_row(
        {g.name,
         std::to_string(res.calibration_rows) + " cal + " + std::to_string(res.validation_rows) + " val",
         res.calibration_rows ? percent(res.calibration_mape) : "-", percent(res.validation_mape),
         percent(res.validation_max), tol, res.pass ? "pass" : "FAIL: " + res.failure});
  }
  out += "# summary\n" + summary.to_text();
  out += report.pass ? "all groups within tolerance\n" : "some groups miss their tolerance (exit 1)\n";
  return out;
}

// ---- fit ----------------------------------------------------------------------------------------

namespace {

// Nelder–Mead minimisation of f from x0 (unconstrained: callers map bounded parameters through
// logistic / exp coordinates).
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, const std::vector<double>& step, int iterations) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> s{x0};
  for (std::size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step[i];
    s.push_back(x);
  }
  std::vector<double> v;
  for (const auto& x : s) v.push_back(f(x));
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::size_t> order(s.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::sort(order, [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    std::vector<double> c(n, 0);
    for (std::size_t i : order)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d) c[d] += s[i][d] / static_cast<double>(n);
    const auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t d = 0; d < n; ++d) x[d] = c[d] + t * (s[worst][d] - c[d]);
      return x;
    };
    const auto xr = along(-1);
    const double fr = f(xr);
    if (fr < v[best]) {
      const auto xe = along(-2);
      const double fe = f(xe);
      if (fe < fr)
        s[worst] = xe, v[worst] = fe;
      else
        s[worst] = xr, v[worst] = fr;
    } else if (fr < v[second]) {
      s[worst] = xr, v[worst] = fr;
    } else {
      const auto xc = along(0.5);
      const double fc = f(xc);
      if (fc < v[worst]) {
        s[worst] = xc, v[worst] = fc;
      } else {
        for (std::size_t i = 0; i < s.size(); ++i)
          if (i != best) {
            for (std::size_t d = 0; d < n; ++d) s[i][d] = s[best][d] + 0.5 * (s[i][d] - s[best][d]);
            v[i] = f(s[i]);
          }
      }
    }
  }
  return s[static_cast<std::size_t>(std::ranges::min_element(v) - v.begin())];
}

double clamp01(double x, double lo = 0, double hi = 1) {
  return std::clamp(x, lo, hi);
}

std::string json_number(double v, int digits) {
  std::ostringstream o;
  o.precision(digits);
  o << v;
  return o.str();
}

}  // namespace

std::string fit_kernels(const std::vector<ValidationGroup>& groups) {
  // Calibration rows by (gpu, kernel) for attention and by gpu for GEMMs.
  std::map<std::pair<std::string, std::string>, std::vector<const ValidationRow*>> attention;
  std::map<std::string, std::vector<const ValidationRow*>> gemm;
  for (const auto& g : groups)
    for (const auto& r : g.rows) {
      if (!r.calibration) continue;
      if (g.kind == ValidationKind::attention_kernel) attention[{r.gpu, r.kernel}].push_back(&r);
      if (g.kind == ValidationKind::gemm) gemm[r.gpu].push_back(&r);
    }
  std::ostringstream out;
  const auto ids = [](const std::vector<const ValidationRow*>& rows) {
    std::string s;
    for (const auto* r : rows) s += (s.empty() ? "" : ", ") + r->id;
    return s;
  };
  const auto objective = [](const std::vector<const ValidationRow*>& rows, const sim::GpuSpec& gpu) {
    double e = 0;
    for (const auto* r : rows) e += std::abs(predict_kernel_row(*r, gpu) / r->measured - 1);
    return e / static_cast<double>(rows.size());
  };
  for (const auto& [key, rows] : attention) {
    const auto& [gpu_name, kernel] = key;
    sim::GpuSpec gpu = load_gpu(gpu_name, "fit");
    // The committed values: a pass no calibration row exercises keeps them.
    const sim::AttentionKernelParams committed = gpu.attention_kernels.contains(kernel)
                                                     ? gpu.attention_kernels.at(kernel)
                                                     : sim::AttentionKernelParams{};
    const bool emulates = kernel == "fa4";
    const bool fwd = std::ranges::any_of(rows, [](const ValidationRow* r) { return has_forward(r->pass); });
    const bool bwd = std::ranges::any_of(rows, [](const ValidationRow* r) { return has_backward(r->pass); });
    // Unconstrained coordinates: efficiencies and overlaps through a logistic, cycles through exp.
    const auto logistic = [](double x) { return 1 / (1 + std::exp(-x)); };
    const auto params = [&](const std::vector<double>& x) {
      sim::AttentionKernelParams p;
      p.mma_efficiency_fwd = 0.05 + 0.95 * logistic(x[0]);
      p.mma_efficiency_bwd = 0.05 + 0.95 * logistic(x[1]);
      p.overlap_fwd = logistic(x[2]);
      p.overlap_bwd = logistic(x[3]);
      p.cta_overhead_cycles_fwd = std::exp(x[4]);
      p.cta_overhead_cycles_bwd = std::exp(x[5]);
      if (emulates) p.exp_emulated = 0.5 * logistic(x[6]);
      if (!fwd) {
        p.mma_efficiency_fwd = committed.mma_efficiency_fwd;
        p.overlap_fwd = committed.overlap_fwd;
        p.cta_overhead_cycles_fwd = committed.cta_overhead_cycles_fwd;
      }
      if (!bwd) {
        p.mma_efficiency_bwd = committed.mma_efficiency_bwd;
        p.overlap_bwd = committed.overlap_bwd;
        p.cta_overhead_cycles_bwd = committed.cta_overhead_cycles_bwd;
      }
      return p;
    };
    const auto f = [&](const std::vector<double>& x) {
      gpu.attention_kernels[kernel] = params(x);
      return objective(rows, gpu);
    };
    std::vector<double> best_x{0.0, 0.0, 0.0, 0.0, std::log(2000.0), std::log(2000.0)};
    if (emulates) best_x.push_back(0);
    double best = f(best_x);
    for (double e0 : {0.0, 1.5})
      for (double o0 : {-1.5, 1.5}) {
        std::vector<double> x{e0, e0, o0, o0, std::log(2000.0), std::log(2000.0)};
        std::vector<double> step{0.5, 0.5, 1, 1, 1, 1};
        if (emulates) x.push_back(0), step.push_back(1);
        for (int restart = 0; restart < 3; ++restart) x = nelder_mead(f, x, step, 300);
        if (const double v = f(x); v < best) best = v, best_x = x;
      }
    const auto p = params(best_x);
    gpu.attention_kernels[kernel] = p;
    // A pass no calibration row exercises keeps its committed constants, said in fitted_on; so does a
    // fit with fewer rows than constants.
    std::string unused = fwd && bwd ? ""
                         : fwd      ? "; backward constants not fitted (no backward rows), kept"
                                    : "; forward constants not fitted (no forward rows), kept";
    const std::size_t fitted = (fwd ? 3 : 0) + (bwd ? 3 : 0) + (emulates ? 1 : 0);
    if (rows.size() < fitted)
      unused += "; " + std::to_string(fitted) + " constants on " + std::to_string(rows.size()) +
                " rows: one consistent set, not each constant measured";
    out << gpu_name << " attention_kernels." << kernel << " (calibration MAPE "
        << percent(objective(rows, gpu), 2) << " over " << rows.size() << " rows):\n"
        << "  \"" << kernel << "\": {\"mma_efficiency_fwd\": " << json_number(p.mma_efficiency_fwd, 3)
        << ", \"mma_efficiency_bwd\": " << json_number(p.mma_efficiency_bwd, 3)
        << ", \"overlap_fwd\": " << json_number(p.overlap_fwd, 3)
        << ", \"overlap_bwd\": " << json_number(p.overlap_bwd, 3)
        << ", \"cta_overhead_cycles_fwd\": " << json_number(std::round(p.cta_overhead_cycles_fwd), 6)
        << ", \"cta_overhead_cycles_bwd\": " << json_number(std::round(p.cta_overhead_cycles_bwd), 6);
    if (emulates) out << ", \"exp_emulated\": " << json_number(p.exp_emulated, 3);
    out << ", \"fitted_on\": \"spsim validate --fit on configs/validation calibration rows: " << ids(rows)
        << unused << "\"}\n";
  }
  for (const auto& [gpu_name, rows] : gemm) {
    sim::GpuSpec gpu = load_gpu(gpu_name, "fit");
    sim::GemmParams start = gpu.gemm ? *gpu.gemm : sim::GemmParams{0.8, 1.0, ""};
    const bool both = rows.size() >= 2;  // one row fixes the efficiency only; the fill stays as given
    const auto params = [&](const std::vector<double>& x) {
      sim::GemmParams p = start;
      p.mma_efficiency = clamp01(x[0], 0.05);
      if (both) p.fill_us = std::max(0.0, x[1]);
      return p;
    };
    const auto f = [&](const std::vector<double>& x) {
      gpu.gemm = params(x);
      return objective(rows, gpu);
    };
    std::vector<double> x{start.mma_efficiency}, step{0.05};
    if (both) x.push_back(start.fill_us), step.push_back(0.5);
    if (x.size() == 1) x.push_back(0), step.push_back(0);  // Nelder–Mead needs two points
    for (int restart = 0; restart < 4; ++restart) x = nelder_mead(f, x, step, 200);
    const auto p = params(x);
    gpu.gemm = p;
    out << gpu_name << " gemm (calibration MAPE " << percent(objective(rows, gpu), 2) << " over "
        << rows.size() << " rows):\n  \"gemm\": {\"mma_efficiency\": " << json_number(p.mma_efficiency, 4)
        << ", \"fill_us\": " << json_number(p.fill_us, 3) << ", \"fitted_on\": \"spsim validate --fit on "
        << "configs/validation calibration rows: " << ids(rows) << (both ? "" : "; fill_us as given")
        << "\"}\n";
  }
  return out.str();
}

}  // namespace spsim::analysis
