// `--cluster FILE|PRESET` for simulate, compare and gantt (see cluster_option.hpp).
#include "cli/cluster_option.hpp"

#include "analysis/json_reader.hpp"
#include "analysis/run.hpp"

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target) {
  sub->add_option("--cluster", target,
                  "replace the config's cluster: a cluster JSON file (e.g. from `spsim calibrate`) or a\n"
                  "preset name (dgx-a100, dgx-h100, hgx-h200, dgx-b200, pcie-a100-4)");
}

analysis::Config load_config_with_cluster(const std::string& path, const std::string& cluster_arg) {
  if (cluster_arg.empty()) return analysis::load_config(path);
  auto doc = analysis::read_json_file(path, path);
  if (doc.is_object()) doc["cluster"] = analysis::cluster_argument(cluster_arg);
  return analysis::parse_config(doc, path);
}

}  // namespace spsim::cli
