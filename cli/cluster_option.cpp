// `--cluster FILE|PRESET` for simulate, compare and gantt (see cluster_option.hpp).
#include "cli/cluster_option.hpp"

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target) {
  sub->add_option("--cluster", target,
                  "replace the config's cluster: a cluster JSON file (e.g. from `spsim calibrate`) or a\n"
                  "preset name (" +
                      join_names(analysis::cluster_presets()) + ")");
}

}  // namespace spsim::cli
