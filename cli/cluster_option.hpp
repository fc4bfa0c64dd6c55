// `--cluster FILE|PRESET` for the commands that simulate a config (simulate, compare, gantt): the
// cluster section of the config is replaced by a cluster file (e.g. written by `spsim calibrate`) or a
// preset, as `spsim run --cluster` does.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "analysis/config.hpp"

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target);

// The config at `path`, with its cluster section replaced when `cluster_arg` is not empty. InputError at
// "--cluster" for a missing file or an invalid cluster.
[[nodiscard]] analysis::Config load_config_with_cluster(const std::string& path, const std::string& cluster_arg);

}  // namespace spsim::cli
