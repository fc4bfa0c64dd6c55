// `spsim report CONFIG... --out DIR`: the RSA backward study (checks, simulated sweeps, plots, answers).
#include <iostream>

#include "analysis/report/rsa_report.hpp"
#include "cli/commands.hpp"
#include "runtime/core/error.hpp"

namespace spsim::cli {

namespace {
struct ReportArgs {
  std::vector<std::string> configs;
  std::string out = "reports/rsa-backward";
  std::string check = "configs/checks/rsa-colossalai.json";
  std::string tp_check = "configs/checks/megatron-tp.json";
  int jobs = 1;
  bool no_plots = false;
};
}  // namespace

Action add_report(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "report",
      "Write the RSA backward report (Markdown + SVG plots): the gradient check of every grad_reduction\n"
      "variant at P = 2, 4, 8, each experiment config's sweep simulated (bytes, time, closed form, peak\n"
      "memory), and the answers to: is the division by P right, all-reduce or reduce-scatter, is a ring\n"
      "pass worth it; and the contrast with column-parallel tensor parallelism (its dX all-reduce, with\n"
      "and without a ÷tp, at tp = 2, 4). Each experiment must sweep grad_reduction, seq_len and model.preset.\n"
      "Example (what scripts/report runs): spsim report configs/experiments/rsa-report-dgx-a100.json\n"
      "  configs/experiments/rsa-report-4x-dgx-a100.json --out reports/rsa-backward");
  auto args = std::make_shared<ReportArgs>();
  sub->add_option("CONFIG", args->configs, "experiment configs (JSON), one section of part (b) each")
      ->required();
  sub->add_option("--out", args->out, "report folder (README.md and plots), default reports/rsa-backward");
  sub->add_option("--check", args->check,
                  "the check config the gradient check varies (default configs/checks/rsa-colossalai.json)");
  sub->add_option("--tp-check", args->tp_check,
                  "the megatron_sp check config the tensor-parallel contrast varies over tp and dx_reduction "
                  "(default configs/checks/megatron-tp.json; empty: no such section)");
  sub->add_option("--jobs", args->jobs, "points simulated in parallel threads (default 1)");
  sub->add_flag("--no-plots", args->no_plots, "write README.md only (no gnuplot needed)");
  return [args]() -> int {
    if (args->jobs < 1) throw InputError("--jobs", "must be at least 1, got " + std::to_string(args->jobs));
    std::vector<analysis::Config> configs;
    for (const auto& c : args->configs) configs.push_back(analysis::load_config(c));
    analysis::ReportOptions o;
    o.out_dir = args->out;
    o.check_config = args->check;
    o.tp_check_config = args->tp_check;
    o.jobs = args->jobs;
    o.plots = !args->no_plots;
    o.simulate = [](const analysis::Config& c) { return analysis::simulate(c, spsim::analysis::SimulateOptions::without_trace_file()); };
    o.command = "scripts/report";
    if (o.plots) (void)analysis::find_gnuplot("--out");
    for (const auto& f : analysis::write_report(configs, o)) std::cout << "wrote " << f.string() << "\n";
    return 0;
  };
}

}  // namespace spsim::cli
