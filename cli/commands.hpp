// One function per subcommand; each lives in its own file under cli/ and registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace spsim::cli {

// A subcommand registers its options and returns the action to run when it is selected; the action
// returns the process exit code (0 ok, 1 a check failed, 2 bad input).
using Action = std::function<int()>;
Action add_check(CLI::App& app);
Action add_collective(CLI::App& app);
Action add_run(CLI::App& app);
Action add_calibrate(CLI::App& app);
Action add_simulate(CLI::App& app);
Action add_compare(CLI::App& app);
Action add_gantt(CLI::App& app);
Action add_report(CLI::App& app);
Action add_validate(CLI::App& app);

}  // namespace spsim::cli
