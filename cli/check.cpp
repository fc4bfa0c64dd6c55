// `spsim check CONFIG [--json] [--dump DIR]`: gradient check of a strategy against the reference.
#include "analysis/check/check.hpp"

#include <iostream>

#include "analysis/report/json.hpp"
#include "cli/commands.hpp"

namespace spsim::cli {

namespace {
struct CheckArgs {
  std::string config;
  bool json = false;
  std::string dump;
};
}  // namespace

Action add_check(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "check",
      "Gradient check: run the strategy on P CPU ranks (threads) with real math and compare every output\n"
      "and gradient with the single-device float64 reference. Exit 0 all pass, 1 some differ, 2 bad input.");
  auto args = std::make_shared<CheckArgs>();
  sub->add_option("CONFIG", args->config, "experiment config (JSON), e.g. configs/checks/rsa-colossalai.json")
      ->required();
  sub->add_flag("--json", args->json, "machine-readable output (schema_version 1)");
  sub->add_option("--dump", args->dump,
                  "write inputs, outputs and gradients (reference and strategy) as .npy");
  return [args]() -> int {
    const auto config = analysis::load_config(args->config);
    const auto result = analysis::run_check(config, {args->dump});
    if (args->json)
      std::cout << analysis::check_json(result);
    else
      std::cout << analysis::render_check(result);
    return result.pass() ? 0 : 1;
  };
}

}  // namespace spsim::cli
