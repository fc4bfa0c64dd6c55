// Hardware specs: GPUs (compute, memory) and link types (bandwidth, latency), as configs/hardware/ lists
// them (analysis/config/hardware.hpp reads the files).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
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

// Per-SM hardware facts for the kernel models (sim/compute/attention_kernel.hpp, gemm_kernel.hpp). The
// tensor-core rate per SM and clock is not listed: it is peak_flops[dtype] / (sm_count · clock_Hz).
struct SmSpec {
  int sm_count = 0;
  double clock_Hz = 0;            // the clock the tensor-core peak is quoted at
  double sfu_per_clk = 0;         // exponentials (MUFU ex2) per SM per clock
  double fp32_lanes_per_clk = 0;  // FP32 instructions per SM per clock (an FMA is one)
  double smem_bytes_per_clk = 0;  // shared-memory bandwidth per SM
};

// The fitted efficiencies of one fused-attention kernel family on one GPU (what its tiles, SFU,
// FP32 and shared-memory times leave unexplained); `fitted_on` names the validation rows they came from.
struct AttentionKernelParams {
  double mma_efficiency_fwd = 1;  // achieved fraction of the tensor-core peak inside a forward tile
  double mma_efficiency_bwd = 1;  // the same for the backward's five GEMMs
  double overlap_fwd = 0;         // fraction of the shorter of (MMA, softmax) hidden under the longer
  double overlap_bwd = 0;
  double cta_overhead_cycles_fwd = 0;  // per thread block besides its HBM prologue and epilogue
  double cta_overhead_cycles_bwd = 0;
  double exp_emulated = 0;  // fraction of exponentials computed on the FMA units (FlashAttention-4)
  std::string fitted_on;
};

// The GEMM model's fitted constants (sim/compute/gemm_kernel.hpp).
struct GemmParams {
  double mma_efficiency = 1;  // achieved fraction of the tensor-core peak in the main loop
  double fill_us = 0;         // per thread block: the pipeline's first loads before the main loop
  std::string fitted_on;
};

// One GPU type: the compute model's inputs (sim/compute/compute_model.hpp). Ops without a kernel model
// take max(FLOPs / (peak x eff), bytes / (HBM x eff)) with per-op-class efficiencies, plus the launch
// overhead; fused attention and GEMMs use the kernel models when `sm` is given.
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
  // The kernel models; without `sm` (an inline GPU without the facts) every op uses the roofline.
  std::optional<SmSpec> sm;
  std::map<std::string, AttentionKernelParams> attention_kernels;  // by family: fa2, fa3, fa4, cudnn
  std::string default_attention_kernel;
  std::optional<GemmParams> gemm;
  [[nodiscard]] double op_efficiency(rt::OpClass c) const { return efficiency[static_cast<std::size_t>(c)]; }
};

}  // namespace spsim::sim
