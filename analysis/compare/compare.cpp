// Sweep evaluation on a small thread pool (results placed by index) and the comparison table.
#include "analysis/compare/compare.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

std::optional<double> CompareRow::closed_ratio() const {
  if (!sim || !closed || closed->step_s <= 0) return std::nullopt;
  return sim->step_time_s / closed->step_s;
}

bool CompareRow::closed_form_flagged() const {
  const auto r = closed_ratio();
  return r && std::abs(*r - 1) > closed_form_tolerance;
}

std::optional<double> CompareResult::speedup(std::size_t row) const {
  if (!baseline || !rows[*baseline].ok() || !rows[row].ok() || rows[row].sim->step_time_s <= 0)
    return std::nullopt;
  return rows[*baseline].sim->step_time_s / rows[row].sim->step_time_s;
}

namespace {

void evaluate(const SweepPoint& point, const SimulateFn& simulate, CompareRow& row) {
  row.values = point.values;
  if (!point.ok()) {
    row.error = point.error;
    return;
  }
  try {
    row.sim = simulate(*point.config);
    row.closed = closed_form(*point.config);
    row.memory = memory_model(*point.config);
  } catch (const ResourceError&) {
    throw;  // depends on the host, not on the point: the comparison fails as a whole
  } catch (const InputError& e) {
    row.sim.reset();
    row.closed = {};
    row.memory = {};
    row.error = e.what();
  }
}

// Runs evaluate() over all points on `jobs` threads; each worker takes the next unclaimed index.
void evaluate_all(const std::vector<SweepPoint>& points, const CompareOptions& options,
                  std::vector<CompareRow>& rows) {
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mutex;  // guards done, first_error and the progress callback
  std::exception_ptr first_error;
  auto worker = [&] {
    for (std::size_t i = next++; i < points.size(); i = next++) {
      try {
        evaluate(points[i], options.simulate, rows[i]);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!first_error) first_error = std::current_exception();
        next = points.size();
        return;
      }
      const std::lock_guard lock(mutex);
      ++done;
      if (options.progress) options.progress(done, points.size());
    }
  };
  const auto jobs = static_cast<std::size_t>(std::max(1, options.jobs));
  std::vector<std::jthread> pool;
  for (std::size_t j = 1; j < std::min(jobs, points.size()); ++j) pool.emplace_back(worker);
  worker();
  pool.clear();  // joins
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace

CompareResult run_compare(const Config& config, const CompareOptions& options) {
  if (!options.simulate) throw std::invalid_argument("run_compare: no simulate function");
  if (options.jobs < 1) throw InputError("--jobs", "must be at least 1, got " + std::to_string(options.jobs));
  const std::vector<SweepPoint> points = expand_sweep(config);
  if (options.baseline && *options.baseline >= points.size())
    throw InputError("--baseline", "row " + std::to_string(*options.baseline + 1) +
                                       " does not exist; the sweep has " + std::to_string(points.size()) +
                                       " rows");
  CompareResult out;
  out.name = config.name;
  for (const auto& axis : config.sweep) out.axes.push_back(axis.path);
  out.rows.resize(points.size());
  evaluate_all(points, options, out.rows);
  out.baseline = options.baseline;
  if (!out.baseline)
    for (std::size_t i = 0; i < out.rows.size() && !out.baseline; ++i)
      if (out.rows[i].ok()) out.baseline = i;
  if (out.baseline && !out.rows[*out.baseline].ok())
    throw InputError("--baseline", "row " + std::to_string(*out.baseline + 1) +
                                       " has no result: " + out.rows[*out.baseline].error);
  return out;
}

// ---- rendering ------------------------------------------------------------------------------------

namespace {

std::string short_axis(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string format_ratio(double r) {
  return format_fixed(r, 3);
}

}  // namespace

Table compare_table(const CompareResult& result) {
  std::vector<Column> cols = {{"#", Align::right}};
  for (const auto& a : result.axes) cols.push_back({short_axis(a), Align::left});
  for (const char* h : {"step", "compute", "exposed comm", "sent", "peak mem", "OOM", "model mem",
                        "closed form", "sim/closed", "speedup"})
    cols.push_back({h, Align::right});
  cols.push_back({"note", Align::left});
  Table table(std::move(cols));
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    std::vector<std::string> cells = {std::to_string(i + 1)};
    for (const auto& v : r.values) cells.push_back(v.text);
    if (!r.ok()) {
      for (int k = 0; k < 10; ++k) cells.emplace_back("-");
      cells.push_back(r.error);
      table.add_row(std::move(cells));
      continue;
    }
    const SimSummary& s = *r.sim;
    cells.push_back(format_seconds(s.step_time_s));
    cells.push_back(format_seconds(s.compute_s));
    cells.push_back(format_seconds(s.exposed_comm_s));
    cells.push_back(format_bytes(s.bytes_sent_max));
    cells.push_back(format_bytes(static_cast<double>(s.peak_memory_bytes)));
    cells.emplace_back(s.oom ? "OOM" : "no");
    cells.push_back(r.memory ? format_bytes(r.memory->peak_bytes) : "n/a");
    cells.push_back(r.closed ? format_seconds(r.closed->step_s) : "n/a");
    const auto ratio = r.closed_ratio();
    cells.push_back(ratio ? format_ratio(*ratio) + (r.closed_form_flagged() ? " !" : "") : "n/a");
    const auto sp = result.speedup(i);
    cells.push_back(sp ? format_fixed(*sp, 2) + "x" : "-");
    std::string note = result.baseline == i ? "baseline" : "";
    if (r.closed_form_flagged())
      note += std::string(note.empty() ? "" : "; ") + "closed form off by more than 2%";
    for (const std::string* why : {&r.closed.reason, &r.memory.reason})
      if (!why->empty()) note += (note.empty() ? "" : "; ") + *why;
    cells.push_back(note);
    table.add_row(std::move(cells));
  }
  return table;
}

std::string render_compare(const CompareResult& result) {
  std::size_t ok = 0;
  for (const auto& r : result.rows) ok += r.ok() ? 1 : 0;
  std::string out = "compare: " + result.name + " (" + std::to_string(result.rows.size()) + " points, " +
                    std::to_string(ok) + " simulated)\n\n";
  out += compare_table(result).to_text();
  out +=
      "\nstep: simulated step time; compute / exposed comm: of the rank that finishes last; sent: bytes the\n"
      "busiest rank puts on links; peak mem: simulated per-rank peak; model mem: the strategy's memory "
      "model\n"
      "(strategies/<family>/memory.cpp); closed form: its alpha-beta-gamma time (strategies/<family>/\n"
      "closed_form.cpp); sim/closed marked '!' when they differ by more than 2%; speedup: baseline step /\n"
      "this step; note: why a model column is n/a.\n";
  return out;
}

namespace {

std::optional<std::size_t> plot_axis(const CompareResult& result) {
  auto numeric = [&](std::size_t a) {
    return std::all_of(result.rows.begin(), result.rows.end(),
                       [&](const CompareRow& r) { return r.values[a].number.has_value(); });
  };
  std::optional<std::size_t> pick;
  for (std::size_t a = 0; a < result.axes.size(); ++a)
    if (numeric(a) && (!pick || result.axes[*pick] != "workload.seq_len")) pick = a;
  return pick;
}

bool powers_of_two(const CompareResult& result, std::size_t axis) {
  return std::all_of(result.rows.begin(), result.rows.end(), [&](const CompareRow& r) {
    if (!r.ok()) return true;  // not plotted
    const double v = *r.values[axis].number;
    return v > 0 && std::exp2(std::round(std::log2(v))) == v;
  });
}

}  // namespace

LinePlot compare_plot(const CompareResult& result) {
  LinePlot plot;
  plot.title = result.name + ": simulated step time";
  plot.y_label = "step time (ms)";
  const auto axis = plot_axis(result);
  const std::size_t x_axis = axis ? *axis : (result.axes.empty() ? 0 : result.axes.size() - 1);
  plot.x_label = result.axes.empty() ? "point" : result.axes[x_axis] + (axis ? "" : " (position)");
  plot.log_x = axis && powers_of_two(result, *axis);
  std::vector<std::string> order;
  std::map<std::string, PlotSeries> by_name;
  std::map<std::string, double> position;  // per series, for non-numeric x
  for (const auto& r : result.rows) {
    std::string name;
    for (std::size_t a = 0; a < r.values.size(); ++a) {
      if (a == x_axis && !result.axes.empty()) continue;
      name += (name.empty() ? "" : ", ") + short_axis(r.values[a].path) + "=" + r.values[a].text;
    }
    if (name.empty()) name = result.name;
    if (!by_name.count(name)) order.push_back(name), by_name[name].name = name;
    const double pos = ++position[name];
    if (!r.ok()) continue;
    const double x = axis ? *r.values[*axis].number : pos;
    by_name[name].points.emplace_back(x, r.sim->step_time_s * 1e3);
  }
  for (const auto& n : order)
    if (!by_name[n].points.empty()) plot.series.push_back(by_name[n]);
  return plot;
}

}  // namespace spsim::analysis
