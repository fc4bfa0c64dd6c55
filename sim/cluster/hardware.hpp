// Hardware specs: GPUs (compute, memory) and link types (bandwidth, latency), as configs/hardware/ lists
// them (analysis/config/hardware.hpp reads the files).
#pragma once

#include <array>
#include <cstdint>
#include <map>
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
  std::map<std::string, double> peak_flops;         // FLOP/s per dtype name: bf16, fp16, tf32, fp32
  double hbm_bytes = 0;                             // memory capacity, bytes
  double hbm_Bps = 0;                               // memory bandwidth, bytes per second
  std::array<double, rt::kOpClasses> efficiency{};  // indexed by rt::OpClass
  Time launch_overhead{};
  std::string nvlink;  // link type name of its NVLink generation ("" = none)
  std::string source;
  [[nodiscard]] double op_efficiency(rt::OpClass c) const { return efficiency[static_cast<std::size_t>(c)]; }
};

}  // namespace spsim::sim
