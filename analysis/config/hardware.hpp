// GPU and link specs from configs/hardware/{gpus,links}/*.json, parsed into the simulator's types.
// Internal to the config parser (it speaks nlohmann::json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/cluster/hardware.hpp"

namespace spsim::analysis {

// Load and validate hardware/gpus/NAME.json and hardware/links/NAME.json (InputError naming `where`).
[[nodiscard]] sim::GpuSpec load_gpu(const std::string& name, const std::string& where);
[[nodiscard]] sim::LinkSpec load_link(const std::string& name, const std::string& where);
// A GPU spec given inline (the same keys as hardware/gpus/*.json; "name" optional, default `name`), so
// a calibrated cluster file (spsim calibrate) carries its own device; errors name `path`.
[[nodiscard]] sim::GpuSpec parse_gpu(const nlohmann::json& j, const std::string& path,
                                     const std::string& name);

}  // namespace spsim::analysis
