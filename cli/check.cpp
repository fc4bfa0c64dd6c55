// `spsim check CONFIG`: placeholder until the gradient-check engine lands.
#include "cli/commands.hpp"
#include "runtime/error.hpp"

namespace spsim::cli {

Action add_check(CLI::App& app) {
  auto* sub = app.add_subcommand("check", "Gradient check of a strategy against the single-device reference");
  auto config = std::make_shared<std::string>();
  sub->add_option("CONFIG", *config, "experiment config (JSON)")->required();
  return [config]() -> int { throw InputError("check", "not implemented yet"); };
}

}  // namespace spsim::cli
