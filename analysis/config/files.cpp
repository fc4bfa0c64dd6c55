// The configs folder: where presets and hardware specs are read from.
#include "analysis/config/files.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

std::filesystem::path config_dir() {
  if (const char* env = std::getenv("SPSIM_CONFIG_DIR"); env && *env) return env;
  return std::filesystem::path(SPSIM_SOURCE_DIR) / "configs";
}

std::vector<std::string> list_configs(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(config_dir() / subdir, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json read_config_json(const std::string& subdir, const std::string& name,
                                const std::string& where) {
  const auto names = list_configs(subdir);
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError(where, "unknown name '" + name + "'; valid choices: " + join_names(names) + " (from " +
                                (config_dir() / subdir).string() + ")");
  const auto file = config_dir() / subdir / (name + ".json");
  std::ifstream in(file);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), std::string("invalid JSON: ") + e.what());
  }
}

}  // namespace spsim::analysis
