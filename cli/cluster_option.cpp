// `--cluster FILE|PRESET` for simulate, compare and gantt (see cluster_option.hpp).
#include "cli/cluster_option.hpp"

#include "analysis/run.hpp"

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target) {
  sub->add_option("--cluster", target,
                  "replace the config's cluster: a cluster JSON file (e.g. from `spsim calibrate`) or a\n"
                  "preset name (dgx-a100, dgx-h100, hgx-h200, dgx-b200, pcie-a100-4)");
}

analysis::Config load_config_with_cluster(const std::string& path, const std::string& cluster_arg) {
  auto config = analysis::load_config(path);
  if (cluster_arg.empty()) return config;
  auto doc = config.raw;
  doc["cluster"] = analysis::cluster_argument(cluster_arg);
  return analysis::parse_config(doc, config.source);
}

}  // namespace spsim::cli
