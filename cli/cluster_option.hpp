// `--cluster FILE|PRESET` for the commands that simulate a config (simulate, compare, gantt): the
// cluster section of the config is replaced by a cluster file (e.g. written by `spsim calibrate`) or a
// preset, as `spsim run --cluster` does (analysis::ConfigOverrides).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target);

}  // namespace spsim::cli
