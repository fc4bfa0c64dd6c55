// Options several subcommands share (see options.hpp).
#include "cli/options.hpp"

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::cli {

void add_cluster_option(CLI::App* sub, std::string& target) {
  sub->add_option("--cluster", target,
                  "replace the config's cluster: a cluster JSON file (e.g. from `spsim calibrate`) or a\n"
                  "preset name (" +
                      join_names(analysis::cluster_presets()) + ")");
}

void add_max_memory_option(CLI::App* sub, std::string& target) {
  sub->add_option("--max-memory", target,
                  "host memory the command may use, e.g. 16G (K, M, G, T: binary multiples); default: what the\n"
                  "machine has free (MemAvailable, RLIMIT_AS, the cgroup's limit). Shapes estimated to need more\n"
                  "are refused before anything is allocated");
}

std::optional<double> max_memory(const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (auto bytes = rt::parse_memory_size(value)) return bytes;
  throw InputError("--max-memory", "'" + value + "' is not a size; give bytes with an optional K, M, G or T suffix, e.g. 16G");
}

}  // namespace spsim::cli
