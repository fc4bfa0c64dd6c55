// `spsim gantt CONFIG --out FILE`: one simulated step drawn per rank and stream (compute, communication).
#include <iostream>

#include "analysis/report/plot.hpp"
#include "analysis/simulate/simulate.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::cli {

namespace {
struct GanttArgs {
  std::string config;
  std::string out;
  std::string cluster;
  std::string max_memory;
};
}  // namespace

Action add_gantt(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "gantt",
      "Simulate one step of the config and draw every rank's compute and communication streams as a\n"
      "Gantt chart (gnuplot; .svg or .png by the extension). Exit 0 on success, 2 on bad input.\n"
      "Example: spsim gantt configs/experiments/rsa-ring-dgx-a100.json --out out/rsa-ring.svg");
  auto args = std::make_shared<GanttArgs>();
  sub->add_option("CONFIG", args->config, "experiment config without a sweep (JSON)")->required();
  add_cluster_option(sub, args->cluster);
  add_max_memory_option(sub, args->max_memory);
  sub->add_option("--out", args->out, "output image, .svg or .png")->required();
  return [args]() -> int {
    (void)analysis::find_gnuplot("--out");
    const auto config = analysis::load_config(args->config, {args->cluster});
    std::vector<analysis::GanttBar> bars;
    analysis::SimulateOptions options;
    options.use_config_trace_out = false;
    options.bars = &bars;
    options.memory_limit = rt::host_memory_limit(max_memory(args->max_memory));
    const auto summary = analysis::simulate(config, options);
    analysis::write_gantt(bars,
                          config.name + ": one step (" + std::to_string(config.world()) + " ranks)",
                          args->out, "--out");
    std::cout << "wrote " << args->out << " (step " << summary.step_time_s * 1e3 << " ms)\n";
    return 0;
  };
}

}  // namespace spsim::cli
