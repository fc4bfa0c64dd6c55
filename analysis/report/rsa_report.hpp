// The RSA backward study (reports/rsa-backward/): the gradient check of every grad_reduction variant,
// the simulated cost of each on real clusters, and plain-words answers backed by those numbers.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/check/check.hpp"
#include "analysis/compare/compare.hpp"

namespace spsim::analysis {

// The RSA grad_reduction variants, in the order the report lists them.
[[nodiscard]] const std::vector<std::string>& rsa_variants();

struct CheckCell {
  std::string variant;
  int degree = 0;
  CheckResult result;
};

// One gradient check of Megatron's column-parallel layer: dx_reduction (sum, sum_div) at tp.
struct TpCheckCell {
  std::string dx_reduction;
  int tp = 0;
  CheckResult result;
};

struct ReportData {
  std::vector<CheckCell> checks;           // every variant × P ∈ {2, 4, 8}
  std::vector<TpCheckCell> tp_checks;      // sum and sum_div × tp ∈ {2, 4} (none without tp_check_config)
  std::vector<CompareResult> experiments;  // one per experiment config, in the order given
  std::vector<Config> configs;             // the experiment configs (for titles and cluster names)
};

struct ReportOptions {
  std::filesystem::path out_dir;       // README.md and the plots go here (created if missing)
  std::filesystem::path check_config;  // the layer the gradient check runs at each P and variant
  // The megatron_sp layer (sequence_parallel false) the tensor-parallel contrast varies over tp and
  // dx_reduction; empty: no such section.
  std::filesystem::path tp_check_config;
  SimulateFn simulate;
  int jobs = 1;
  bool plots = true;    // false: README only (no gnuplot needed)
  std::string command;  // how to regenerate, quoted in the report
};

// Runs the checks and the experiments' sweeps. Each experiment must sweep
// strategy.options.grad_reduction, workload.seq_len and model.preset (InputError naming the config).
[[nodiscard]] ReportData collect_report(const std::vector<Config>& experiments, const ReportOptions& options);

// The Markdown of reports/rsa-backward/README.md. `plot_files[i]` lists experiment i's plot file
// names (relative to the report folder), one per model; empty when plots are off.
[[nodiscard]] std::string render_report(const ReportData& data,
                                        const std::vector<std::vector<std::string>>& plot_files,
                                        const std::string& command);

// collect + plots + README.md in options.out_dir; returns the files written.
std::vector<std::filesystem::path> write_report(const std::vector<Config>& experiments,
                                                const ReportOptions& options);

}  // namespace spsim::analysis
