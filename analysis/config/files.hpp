// The configs folder (configs/: model and cluster presets, hardware specs) and reading its JSON files.
// Internal to the config parser (it speaks nlohmann::json).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace spsim::analysis {

// $SPSIM_CONFIG_DIR if set, else the source tree's configs/ (SPSIM_SOURCE_DIR).
[[nodiscard]] std::filesystem::path config_dir();
// Sorted names (file stems) of the *.json files in config_dir()/subdir.
[[nodiscard]] std::vector<std::string> list_configs(const std::string& subdir);
// Reads config_dir()/subdir/name.json; unknown name → InputError at `where` listing the choices.
[[nodiscard]] nlohmann::json read_config_json(const std::string& subdir, const std::string& name,
                                              const std::string& where);

}  // namespace spsim::analysis
