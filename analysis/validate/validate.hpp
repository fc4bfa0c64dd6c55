// `spsim validate`: every committed published measurement (configs/validation/, analysis/config/
// validation.hpp) run through the code `simulate` uses — kernel rows through sim::ComputeModel with
// the op costs the trace records (runtime/cost.hpp), distributed rows through analysis::simulate —
// with the error per row and the MAPE per group, separately for calibration rows (fitted on) and
// validation rows (never fitted on). A group passes when its validation MAPE (and, if it states
// one, its largest validation error and each ratio) is within its tolerance.
//
// `fit_kernels` is how the kernel models' constants in configs/hardware/gpus/*.json were obtained:
// Nelder–Mead on the calibration rows of each (GPU, kernel family), minimising their MAPE.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/config/validation.hpp"
#include "sim/cluster/hardware.hpp"

namespace spsim::analysis {

struct RowResult {
  const ValidationRow* row = nullptr;
  double predicted = 0;
  double error = 0;   // predicted / measured − 1
  bool held = false;  // counts towards the group's validation tolerance
};

struct RatioResult {
  const ValidationRatio* ratio = nullptr;
  double measured = 0, predicted = 0, error = 0;
  bool pass = false;
};

struct GroupResult {
  const ValidationGroup* group = nullptr;
  std::vector<RowResult> rows;
  std::vector<RatioResult> ratios;
  int calibration_rows = 0, validation_rows = 0;  // validation_rows: those held to the tolerance
  double calibration_mape = 0, validation_mape = 0, validation_max = 0;
  bool pass = true;
  std::string failure;  // why not, when !pass
};

struct ValidationReport {
  std::vector<ValidationGroup> groups;  // owns the rows the results point into
  std::vector<GroupResult> results;
  bool pass = true;
};

struct ValidateOptions {
  std::string dir;                  // default configs/validation
  std::vector<std::string> groups;  // only these (empty: all)
};

[[nodiscard]] ValidationReport run_validation(const ValidateOptions& options);
[[nodiscard]] std::string render_validation(const ValidationReport& report);

// The model's prediction for one kernel row in the row's unit, on `gpu` (InputError naming the row).
[[nodiscard]] double predict_kernel_row(const ValidationRow& row, const sim::GpuSpec& gpu);

// Fits the attention-kernel and GEMM constants on the calibration rows of `groups` and returns, per
// GPU, the JSON text of its fitted "attention_kernels" and "gemm" entries with their "fitted_on".
[[nodiscard]] std::string fit_kernels(const std::vector<ValidationGroup>& groups);

}  // namespace spsim::analysis
