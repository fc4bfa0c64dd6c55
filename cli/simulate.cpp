// `spsim simulate CONFIG [--json] [--trace FILE]`: predicted step time, breakdown and memory of a strategy.
#include "analysis/simulate/simulate.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "analysis/report/json.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::cli {

namespace {
struct SimulateArgs {
  std::string config;
  bool json = false;
  std::string trace;
  std::string cluster;
  std::string max_memory;
  bool progress = false;
};

// One line per stage on stderr, with the seconds since the command started.
void show_stage(std::chrono::steady_clock::time_point started, const std::string& stage) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
  std::fprintf(stderr, "[%7.1f s] %s\n", elapsed.count(), stage.c_str());
  std::fflush(stderr);
}
}  // namespace

Action add_simulate(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "simulate",
      "Predict one training step of a strategy on a simulated GPU cluster: the strategy runs on P\n"
      "data-less trace ranks and the traces are replayed on the config's cluster (compute roofline per\n"
      "op, flow-level network, NCCL-style collectives). Prints the step time, the forward/backward\n"
      "split, per-rank compute, communication, exposed (un-overlapped) communication and idle time,\n"
      "bytes sent per collective kind, peak memory per GPU (OOM flagged) and the most expensive ops.\n"
      "Exit 0 on success, 2 on bad input (with the JSON path), 3 on an internal error.\n"
      "Example: spsim simulate configs/experiments/rsa-ring-dgx-a100.json --trace out/rsa-ring.json");
  auto args = std::make_shared<SimulateArgs>();
  sub->add_option("CONFIG", args->config,
                  "experiment config (JSON), e.g. configs/experiments/rsa-ring-dgx-a100.json")
      ->required();
  add_cluster_option(sub, args->cluster);
  add_max_memory_option(sub, args->max_memory);
  sub->add_flag("--json", args->json,
                "machine-readable output (starts with \"schema_version\": 1; identical across runs)");
  sub->add_option("--trace", args->trace,
                  "write a Chrome trace (open in https://ui.perfetto.dev: one process per rank, one thread\n"
                  "per stream); overrides simulation.trace_out of the config");
  sub->add_flag("--progress", args->progress,
                "print each stage (tracing, replaying, summarising) with the elapsed time on stderr; on by\n"
                "default when stderr is a terminal");
  return [args]() -> int {
    const auto started = std::chrono::steady_clock::now();
    const auto config = analysis::load_config(args->config, {args->cluster});
    analysis::SimulateOptions options;
    options.chrome_trace = args->trace;
    options.memory_limit = rt::host_memory_limit(max_memory(args->max_memory));
    if (args->progress || isatty(STDERR_FILENO) == 1)
      options.progress = [started](const std::string& stage) { show_stage(started, stage); };
    const auto summary = analysis::simulate(config, options);
    if (args->json)
      std::cout << analysis::simulation_json(config, summary);
    else
      std::cout << analysis::render_simulation(config, summary);
    return 0;
  };
}

}  // namespace spsim::cli
