// spsim entry point: parses the command line and dispatches to one subcommand.
#include <iostream>
#include <vector>

#include "cli/commands.hpp"
#include "runtime/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "spsim: simulator and cost model for sequence-parallel attention strategies.\n"
      "Checks gradients on CPU ranks, predicts runtime and memory on GPU clusters, and runs\n"
      "strategies for real through MPI or NCCL."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "spsim 0.1.0");
  std::vector<std::pair<CLI::App*, spsim::cli::Action>> actions;
  auto track = [&](spsim::cli::Action a) { actions.emplace_back(app.get_subcommands({}).back(), std::move(a)); };
  track(spsim::cli::add_check(app));
  track(spsim::cli::add_collective(app));
  track(spsim::cli::add_run(app));
  track(spsim::cli::add_calibrate(app));
  track(spsim::cli::add_simulate(app));
  track(spsim::cli::add_compare(app));
  track(spsim::cli::add_gantt(app));
  track(spsim::cli::add_report(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const spsim::InputError& e) {
    std::cerr << "spsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spsim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
