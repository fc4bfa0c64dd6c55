// Options several subcommands share: `--cluster FILE|PRESET` for the commands that simulate a config
// (simulate, compare, gantt: the config's cluster section is replaced by a cluster file, e.g. written by
// `spsim calibrate`, or a preset, as `spsim run --cluster` does; analysis::ConfigOverrides), and
// `--max-memory SIZE` for those that estimate their memory first (check, run, simulate, compare).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target);

void add_max_memory_option(CLI::App* sub, std::string& target);
// The --max-memory value in bytes (nullopt when not given: the machine's free memory applies);
// InputError at "--max-memory" for a value that is not a size.
[[nodiscard]] std::optional<double> max_memory(const std::string& value);

}  // namespace spsim::cli
