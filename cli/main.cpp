// spsim entry point: parses the command line and dispatches to one subcommand.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/usage.hpp"
#include "runtime/core/error.hpp"

namespace {

// Under mpirun every rank parses the same command line, and `run` checks its options, before MPI is
// initialised, so a usage error would be printed once per rank. The launchers export the rank (Open MPI,
// PMIx, MPICH/Hydra); ranks other than 0 stay silent. They also leave rank 0 time to print: mpirun ends
// the whole job as soon as one process exits non-zero, so they exit only after a grace period, by which
// time rank 0's exit has normally ended the job with its status.
bool launcher_rank_zero() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(var)) return std::string(value) == "0";
  return true;
}

// Bad input: rank 0 of a launcher's job (or a process run alone) says why; exit status 2.
int input_error(const std::string& message) {
  if (launcher_rank_zero()) {
    std::cerr << "spsim: error: " << message << "\n";
    return 2;
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "spsim: simulator and cost model for sequence-parallel attention strategies.\n"
      "Checks gradients on CPU ranks, predicts runtime and memory on GPU clusters, and runs\n"
      "strategies for real through MPI or NCCL."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "spsim 0.1.0");
  std::vector<std::pair<CLI::App*, spsim::cli::Action>> actions;
  auto track = [&](spsim::cli::Action a) {
    actions.emplace_back(app.get_subcommands({}).back(), std::move(a));
  };
  track(spsim::cli::add_check(app));
  track(spsim::cli::add_collective(app));
  track(spsim::cli::add_run(app));
  track(spsim::cli::add_calibrate(app));
  track(spsim::cli::add_simulate(app));
  track(spsim::cli::add_compare(app));
  track(spsim::cli::add_gantt(app));
  track(spsim::cli::add_report(app));
  track(spsim::cli::add_validate(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return input_error(spsim::cli::usage_message(app, std::vector<std::string>(argv + 1, argv + argc), e));
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const spsim::InputError& e) {
    return input_error(e.what());
  } catch (const std::bad_alloc&) {
    // The last line of defence: the commands estimate their memory first and name the stage that ran out.
    std::cerr << "spsim: error: out of memory: these shapes need more memory than this process can get "
                 "(`spsim simulate` predicts large shapes without data)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spsim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
