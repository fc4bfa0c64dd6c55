// `spsim compare`: simulate every point of a config's sweep and tabulate them side by side with the
// closed-form time and memory (analysis/closed_form/) and the speedup over a baseline.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/config/config.hpp"
#include "analysis/config/sweep.hpp"
#include "analysis/report/plot.hpp"
#include "analysis/report/table.hpp"
#include "analysis/simulate/simulate.hpp"

namespace spsim::analysis {

// A closed form further than this from the simulated time is flagged: on an uncontended cluster the
// two compute the same model and agree to rounding (tests/analysis/closed_form/), so a gap means contention
// the closed form ignores, an algorithm it does not model, or a bug in one of them.
inline constexpr double closed_form_tolerance = 0.02;

struct CompareRow {
  std::vector<SweepValue> values;  // one per sweep axis
  std::string error;               // why the point has no result (invalid combination, simulation error)
  std::optional<SimSummary> sim;
  Modelled<CostEstimate> closed;    // the strategy's closed form, or why there is none
  Modelled<MemoryEstimate> memory;  // its memory model, or why there is none
  [[nodiscard]] bool ok() const { return sim.has_value(); }
  // sim step / closed-form step, when both exist.
  [[nodiscard]] std::optional<double> closed_ratio() const;
  [[nodiscard]] bool closed_form_flagged() const;
};

struct CompareResult {
  std::string name;
  std::vector<std::string> axes;  // swept paths, in order
  std::vector<CompareRow> rows;   // in sweep order
  std::optional<std::size_t>
      baseline;  // index of the row speedups are relative to (first valid row by default)
  // baseline step / this row's step; nullopt for rows without a result or without a baseline.
  [[nodiscard]] std::optional<double> speedup(std::size_t row) const;
};

using SimulateFn = std::function<SimSummary(const Config&)>;

struct CompareOptions {
  int jobs = 1;                         // worker threads; the result does not depend on it
  std::optional<std::size_t> baseline;  // 0-based row index; InputError at "--baseline" if out of range
  SimulateFn simulate;                  // required (analysis::simulate in the CLI; a stub in tests)
  // Called after each point, from the worker that finished it, serialised: (points done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

// Expands config's sweep and evaluates every point. A point that expand_sweep marks invalid, or whose
// simulation throws InputError (degree larger than the cluster, bad cluster section), becomes a row
// with `error`; any other exception propagates after the workers stop.
[[nodiscard]] CompareResult run_compare(const Config& config, const CompareOptions& options);

// The table: #, swept values, step, compute, exposed comm, sent, peak mem, OOM, model mem, closed form,
// sim/closed (with "!" past the tolerance), speedup, note.
[[nodiscard]] Table compare_table(const CompareResult& result);
[[nodiscard]] std::string render_compare(const CompareResult& result);  // table + legend

// Step time against a swept value, one series per combination of the other axes. The x axis is
// workload.seq_len when it is swept, else the last axis with numeric values (log-2 scale when every
// value is a positive power of two), else the position along the last axis.
[[nodiscard]] LinePlot compare_plot(const CompareResult& result);

}  // namespace spsim::analysis
