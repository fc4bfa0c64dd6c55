// `spsim check CONFIG [--json] [--dump DIR]`: gradient check of a strategy against the reference.
#include "analysis/check/check.hpp"

#include <iostream>

#include "analysis/report/json.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"

namespace spsim::cli {

namespace {
struct CheckArgs {
  std::string config;
  bool json = false;
  std::string dump;
  std::string max_memory;
};
}  // namespace

Action add_check(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "check",
      "Gradient check: run the strategy on P CPU ranks (threads) with real math and compare every output\n"
      "and gradient with the single-device float64 reference. The shapes' host memory is estimated first:\n"
      "more than the machine has free (or --max-memory) is refused with the estimate and the keys that\n"
      "drive it (use `spsim simulate` for such shapes). Exit 0 all pass, 1 some differ, 2 bad input.");
  auto args = std::make_shared<CheckArgs>();
  sub->add_option("CONFIG", args->config, "experiment config (JSON), e.g. configs/checks/rsa-colossalai.json")
      ->required();
  sub->add_flag("--json", args->json, "machine-readable output (schema_version 1)");
  sub->add_option("--dump", args->dump,
                  "write inputs, outputs and gradients (reference and strategy) as .npy");
  add_max_memory_option(sub, args->max_memory);
  return [args]() -> int {
    const auto config = analysis::load_config(args->config);
    analysis::CheckOptions options;
    options.dump_dir = args->dump;
    options.max_memory = max_memory(args->max_memory);
    const auto result = analysis::run_check(config, options);
    if (args->json)
      std::cout << analysis::check_json(result);
    else
      std::cout << analysis::render_check(result);
    return result.pass() ? 0 : 1;
  };
}

}  // namespace spsim::cli
