// GPU and link specs from configs/hardware/{gpus,links}/*.json (or inline in a cluster section).
#include "analysis/config/hardware.hpp"

#include "analysis/config/files.hpp"
#include "analysis/config/json_fields.hpp"
#include "runtime/core/error.hpp"
#include "sim/compute/attention_kernel.hpp"

namespace spsim::analysis {

using namespace sim;
using fields::check_keys;
using fields::get_latency_us;
using fields::get_nonnegative;
using fields::get_positive_int;
using fields::get_string;
using fields::join_path;

namespace {

LinkClass parse_link_class(const nlohmann::json& j, const std::string& path) {
  const std::string c = get_string(j, path, "class");
  if (c == "nvlink") return LinkClass::nvlink;
  if (c == "pcie") return LinkClass::pcie;
  if (c == "network") return LinkClass::network;
  throw InputError(join_path(path, "class"),
                   "unknown link class '" + c + "'; valid choices: nvlink, pcie, network");
}

// The kernel models' inputs (sim/cluster/hardware.hpp): per-SM facts, the fitted attention kernel
// families and GEMM constants. All optional; without "sm" the GPU is priced by its roofline.
void parse_kernel_models(const nlohmann::json& j, const std::string& path, GpuSpec& g) {
  if (j.contains("sm")) {
    const std::string p = join_path(path, "sm");
    const auto& s = j.at("sm");
    check_keys(s, p,
               {"count", "clock_MHz", "sfu_per_clk", "fp32_lanes_per_clk", "smem_bytes_per_clk", "source"});
    SmSpec sm;
    sm.sm_count = get_positive_int(s, p, "count");
    sm.clock_Hz = get_nonnegative(s, p, "clock_MHz", true) * 1e6;
    sm.sfu_per_clk = get_nonnegative(s, p, "sfu_per_clk", true);
    sm.fp32_lanes_per_clk = get_nonnegative(s, p, "fp32_lanes_per_clk", true);
    sm.smem_bytes_per_clk = get_nonnegative(s, p, "smem_bytes_per_clk", true);
    for (double v : {sm.clock_Hz, sm.sfu_per_clk, sm.fp32_lanes_per_clk, sm.smem_bytes_per_clk})
      if (!(v > 0)) throw InputError(p, "every per-SM fact must be > 0");
    g.sm = sm;
  }
  if (j.contains("attention_kernels")) {
    const std::string p = join_path(path, "attention_kernels");
    const auto& ks = j.at("attention_kernels");
    if (!ks.is_object()) throw InputError(p, "expected an object of kernel families (fa2, fa3, fa4, cudnn)");
    if (!g.sm) throw InputError(p, "needs the per-SM facts (\"sm\") of the GPU");
    for (const auto& [name, k] : ks.items()) {
      const std::string kp = join_path(p, name);
      if (!sim::find_kernel_family(name)) {
        std::string valid;
        for (const auto& f : sim::kernel_families()) valid += (valid.empty() ? "" : ", ") + f.name;
        throw InputError(kp, "unknown attention kernel family '" + name + "'; valid choices: " + valid);
      }
      check_keys(k, kp,
                 {"mma_efficiency_fwd", "mma_efficiency_bwd", "overlap_fwd", "overlap_bwd",
                  "cta_overhead_cycles_fwd", "cta_overhead_cycles_bwd", "exp_emulated", "fitted_on"});
      AttentionKernelParams a;
      a.mma_efficiency_fwd = get_nonnegative(k, kp, "mma_efficiency_fwd", true);
      a.mma_efficiency_bwd = get_nonnegative(k, kp, "mma_efficiency_bwd", true);
      a.overlap_fwd = get_nonnegative(k, kp, "overlap_fwd");
      a.overlap_bwd = get_nonnegative(k, kp, "overlap_bwd");
      a.cta_overhead_cycles_fwd = get_nonnegative(k, kp, "cta_overhead_cycles_fwd");
      a.cta_overhead_cycles_bwd = get_nonnegative(k, kp, "cta_overhead_cycles_bwd");
      a.exp_emulated = k.contains("exp_emulated") ? get_nonnegative(k, kp, "exp_emulated") : 0;
      a.fitted_on = get_string(k, kp, "fitted_on");
      for (double v : {a.mma_efficiency_fwd, a.mma_efficiency_bwd})
        if (!(v > 0) || v > 1) throw InputError(kp, "MMA efficiencies must be in (0, 1]");
      if (a.overlap_fwd > 1 || a.overlap_bwd > 1 || a.exp_emulated > 1)
        throw InputError(kp, "overlap and exp_emulated must be in [0, 1]");
      g.attention_kernels[name] = a;
    }
  }
  if (j.contains("default_attention_kernel")) {
    g.default_attention_kernel = get_string(j, path, "default_attention_kernel");
    if (!g.attention_kernels.contains(g.default_attention_kernel))
      throw InputError(join_path(path, "default_attention_kernel"),
                       "'" + g.default_attention_kernel + "' is not one of this GPU's attention_kernels");
  }
  if (j.contains("gemm")) {
    const std::string p = join_path(path, "gemm");
    const auto& k = j.at("gemm");
    if (!g.sm) throw InputError(p, "needs the per-SM facts (\"sm\") of the GPU");
    check_keys(k, p, {"mma_efficiency", "fill_us", "fitted_on"});
    GemmParams gp;
    gp.mma_efficiency = get_nonnegative(k, p, "mma_efficiency", true);
    if (!(gp.mma_efficiency > 0) || gp.mma_efficiency > 1)
      throw InputError(p, "mma_efficiency must be in (0, 1]");
    gp.fill_us = get_nonnegative(k, p, "fill_us");
    gp.fitted_on = get_string(k, p, "fitted_on");
    g.gemm = gp;
  }
}

}  // namespace

LinkSpec load_link(const std::string& name, const std::string& where) {
  const auto j = read_config_json("hardware/links", name, where);
  const std::string path = "hardware/links/" + name + ".json";
  check_keys(j, path,
             {"name", "description", "class", "bandwidth_GBps", "efficiency", "latency_us", "source"});
  LinkSpec s;
  s.name = name;
  s.link_class = parse_link_class(j, path);
  s.bandwidth_Bps = get_nonnegative(j, path, "bandwidth_GBps", true) * 1e9;
  s.efficiency = get_nonnegative(j, path, "efficiency", true);
  s.latency = Time::from_us(get_latency_us(j, path, "latency_us"));
  s.source = get_string(j, path, "source");
  return s;
}

GpuSpec load_gpu(const std::string& name, const std::string& where) {
  return parse_gpu(read_config_json("hardware/gpus", name, where), "hardware/gpus/" + name + ".json", name);
}

GpuSpec parse_gpu(const nlohmann::json& j, const std::string& path, const std::string& name) {
  check_keys(
      j, path,
      {"name", "description", "peak_tflops", "hbm_bytes", "hbm_GBps", "efficiency", "launch_overhead_us",
       "nvlink", "source", "sm", "attention_kernels", "default_attention_kernel", "gemm"});
  GpuSpec g;
  for (const char* key : {"peak_tflops", "efficiency"})
    if (!j.contains(key)) throw InputError(join_path(path, key), "missing required key");
  g.name = j.contains("name") ? get_string(j, path, "name") : name;
  g.description = get_string(j, path, "description");
  const std::string peak_path = join_path(path, "peak_tflops");
  check_keys(j.at("peak_tflops"), peak_path, {"bf16", "fp16", "tf32", "fp32", "fp64"});
  for (const auto& [dtype, v] : j.at("peak_tflops").items())
    g.peak_flops[dtype] = get_nonnegative(j.at("peak_tflops"), peak_path, dtype, true) * 1e12;
  g.hbm_bytes = get_nonnegative(j, path, "hbm_bytes", true);
  g.hbm_Bps = get_nonnegative(j, path, "hbm_GBps", true) * 1e9;
  const std::string eff_path = join_path(path, "efficiency");
  const auto& eff = j.at("efficiency");
  check_keys(eff, eff_path,
             {"gemm", "attention_forward", "attention_backward", "softmax", "elementwise", "copy"});
  for (int c = 0; c < 6; ++c) {
    const auto name_c = std::string(rt::op_class_name(static_cast<rt::OpClass>(c)));
    g.efficiency[static_cast<std::size_t>(c)] = get_nonnegative(eff, eff_path, name_c, true);
  }
  g.launch_overhead = Time::from_us(get_latency_us(j, path, "launch_overhead_us"));
  g.nvlink = j.contains("nvlink") ? get_string(j, path, "nvlink") : "";
  g.source = get_string(j, path, "source");
  parse_kernel_models(j, path, g);
  return g;
}

}  // namespace spsim::analysis
