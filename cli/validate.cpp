// `spsim validate`: the models against the committed published measurements (configs/validation/).
#include "analysis/validate/validate.hpp"

#include <iostream>

#include "cli/commands.hpp"

namespace spsim::cli {

namespace {
struct Args {
  analysis::ValidateOptions options;
  bool fit = false;
};
}  // namespace

Action add_validate(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "validate",
      "Run every published measurement in configs/validation/ (single-kernel attention, GEMM, distributed\n"
      "attention) through the models simulate uses and print measured, predicted and error per row, and\n"
      "per group the MAPE of the calibration rows (the kernel models' constants were fitted on them) and\n"
      "of the validation rows (never fitted on) against the group's tolerance. Exit 0 when every group is\n"
      "within tolerance, 1 when one is not, 2 on bad input.\n"
      "--fit refits the kernel models' constants on the calibration rows and prints them as the JSON\n"
      "entries of configs/hardware/gpus/*.json (how the committed values were obtained).\n"
      "Example: spsim validate --group fa2-a100-fwd-bwd");
  auto a = std::make_shared<Args>();
  sub->add_option("--dir", a->options.dir, "folder of validation groups (default: configs/validation)");
  sub->add_option("--group", a->options.groups,
                  "only this group (repeatable); names are the files' \"group\"");
  sub->add_flag("--fit", a->fit, "fit the kernel-model constants on the calibration rows and print them");
  return [a]() -> int {
    if (a->fit) {
      auto groups = analysis::run_validation(a->options).groups;  // --group filters the fit too
      std::cout << analysis::fit_kernels(groups);
      return 0;
    }
    const auto report = analysis::run_validation(a->options);
    std::cout << analysis::render_validation(report);
    return report.pass ? 0 : 1;
  };
}

}  // namespace spsim::cli
