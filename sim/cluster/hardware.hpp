// Hardware specs read from configs/hardware/: GPUs (compute, memory) and link types (bandwidth, latency).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/core/types.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

// Which NCCL latency column a link belongs to (NVLink, PCIe or the inter-node network).
enum class LinkClass : std::uint8_t { nvlink, pcie, network };
inline constexpr int kLinkClasses = 3;
[[nodiscard]] const char* link_class_name(LinkClass c);

// One link type, per direction. The simulator uses effective_Bps() = line rate x efficiency: the
// efficiency holds what the line rate loses to framing/protocol headers (e.g. NVLink3 carries
// ~20 of its 25 GB/s as payload), with its source in `source`.
struct LinkSpec {
  std::string name;
  LinkClass link_class = LinkClass::network;
  double bandwidth_Bps = 0;  // line rate, bytes per second, one direction
  double efficiency = 1;     // achievable payload fraction of the line rate, (0, 1]
  Time latency{};            // per hop
  std::string source;
  [[nodiscard]] double effective_Bps() const { return bandwidth_Bps * efficiency; }
};

// One GPU type: the compute model's inputs. Efficiencies are per op class (runtime OpClass order);
// compute time = max(FLOPs / (peak x eff), bytes / (HBM x eff)) + launch overhead (DESIGN.md §6).
struct GpuSpec {
  std::string name;
  std::string description;
  std::map<std::string, double> peak_flops;  // FLOP/s per dtype name: bf16, fp16, tf32, fp32
  double hbm_bytes = 0;                      // memory capacity, bytes
  double hbm_Bps = 0;                        // memory bandwidth, bytes per second
  std::array<double, rt::kOpClasses> efficiency{};  // indexed by rt::OpClass
  Time launch_overhead{};
  std::string nvlink;  // link type name of its NVLink generation ("" = none)
  std::string source;
  [[nodiscard]] double op_efficiency(rt::OpClass c) const { return efficiency[static_cast<std::size_t>(c)]; }
};

// The configs folder: $SPSIM_CONFIG_DIR if set, else the source tree's configs/ (SPSIM_SOURCE_DIR).
[[nodiscard]] std::filesystem::path config_dir();
// Sorted names (file stems) of the *.json files in config_dir()/subdir.
[[nodiscard]] std::vector<std::string> list_configs(const std::string& subdir);
// Reads config_dir()/subdir/name.json; unknown name → InputError at `where` listing the choices.
[[nodiscard]] nlohmann::json read_config_json(const std::string& subdir, const std::string& name,
                                              const std::string& where);

// Load and validate hardware/gpus/NAME.json and hardware/links/NAME.json (InputError naming `where`).
[[nodiscard]] GpuSpec load_gpu(const std::string& name, const std::string& where);
// A GPU spec given inline (the same keys as hardware/gpus/*.json; "name" optional, default `name`), so
// a calibrated cluster file (spsim calibrate) carries its own device; errors name `path`.
[[nodiscard]] GpuSpec parse_gpu(const nlohmann::json& j, const std::string& path, const std::string& name);
[[nodiscard]] LinkSpec load_link(const std::string& name, const std::string& where);

}  // namespace spsim::sim
