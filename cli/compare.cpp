// `spsim compare CONFIG [--json] [--csv FILE] [--md FILE] [--plot FILE] [--jobs N] [--baseline N]`.
#include "analysis/compare/compare.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "analysis/report/json.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/core/error.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::cli {

namespace {

struct CompareArgs {
  std::string config;
  bool json = false;
  std::string csv, md, plot;
  int jobs = 1;
  std::size_t baseline = 0;  // 1-based row; 0 = the first row with a result
  std::string cluster;
  std::string max_memory;
};

void write_text(const std::string& path, const std::string& text, const std::string& where) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text)) throw InputError(where, "cannot write '" + path + "'");
}

// A one-line bar redrawn with '\r'; only used when stderr is a terminal.
void draw_progress(std::size_t done, std::size_t total) {
  constexpr int width = 30;
  const int filled = static_cast<int>(width * done / std::max<std::size_t>(total, 1));
  std::fprintf(stderr, "\r[%s%s] %zu/%zu points", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "compare",
      "Simulate every point of the config's sweep (dotted paths x value lists, cartesian product) and\n"
      "print one table: the swept values, step time, compute, exposed communication, bytes sent, peak\n"
      "memory, OOM, the closed-form memory and time (alpha-beta-gamma) with sim/closed (flagged '!' past\n"
      "2%), and the speedup against the first row or --baseline. Points a strategy cannot run appear as\n"
      "rows with the reason. Exit 0 on success, 2 on bad input or when no point could be simulated.\n"
      "Example: spsim compare configs/experiments/rsa-backward-dgx-a100.json --plot out/rsa.svg --jobs 2");
  auto args = std::make_shared<CompareArgs>();
  sub->add_option("CONFIG", args->config, "experiment config with a sweep (JSON)")->required();
  add_cluster_option(sub, args->cluster);
  add_max_memory_option(sub, args->max_memory);
  sub->add_flag("--json", args->json, "machine-readable output (schema_version 1; identical for any --jobs)");
  sub->add_option("--csv", args->csv, "also write the table as CSV to this file");
  sub->add_option("--md", args->md, "also write the table as Markdown to this file");
  sub->add_option("--plot", args->plot,
                  "step time vs the swept value, one series per variant (.svg or .png; needs gnuplot)");
  sub->add_option("--jobs", args->jobs, "points simulated in parallel threads (default 1)");
  sub->add_option("--baseline", args->baseline,
                  "row number (as in the # column) that speedups are relative to");
  return [args]() -> int {
    if (args->jobs < 1) throw InputError("--jobs", "must be at least 1, got " + std::to_string(args->jobs));
    if (!args->plot.empty()) (void)analysis::find_gnuplot("--plot");  // fail before simulating
    const auto config = analysis::load_config(args->config, {args->cluster});
    analysis::CompareOptions options;
    options.jobs = args->jobs;
    if (args->baseline > 0) options.baseline = args->baseline - 1;
    // Points run in parallel: each may take 1/jobs of the memory limit (one that needs more fails the
    // comparison as a whole: its verdict would depend on the host).
    auto point_options = analysis::SimulateOptions::without_trace_file();
    const rt::MemoryLimit limit = rt::host_memory_limit(max_memory(args->max_memory));
    point_options.memory_limit = rt::MemoryLimit{
        limit.bytes / args->jobs,
        args->jobs == 1 ? limit.source : limit.source + ", shared by --jobs " + std::to_string(args->jobs)};
    options.simulate = [point_options](const analysis::Config& c) {
      return analysis::simulate(c, point_options);
    };
    if (isatty(STDERR_FILENO) == 1) options.progress = draw_progress;
    const auto result = analysis::run_compare(config, options);
    const auto table = analysis::compare_table(result);
    if (!args->csv.empty()) write_text(args->csv, table.to_csv(), "--csv");
    if (!args->md.empty()) write_text(args->md, table.to_markdown(), "--md");
    if (!args->plot.empty()) analysis::write_line_plot(analysis::compare_plot(result), args->plot, "--plot");
    if (args->json)
      std::cout << analysis::compare_json(result);
    else
      std::cout << analysis::render_compare(result);
    const bool any =
        std::any_of(result.rows.begin(), result.rows.end(), [](const auto& r) { return r.ok(); });
    if (!any) std::cerr << "spsim: error: no point of the sweep could be simulated (see the note column)\n";
    return any ? 0 : 2;
  };
}

}  // namespace spsim::cli
