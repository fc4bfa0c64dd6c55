// GPU and link specs from configs/hardware/{gpus,links}/*.json (or inline in a cluster section).
#include "analysis/config/hardware.hpp"

#include "analysis/config/files.hpp"
#include "analysis/config/json_fields.hpp"
#include "runtime/core/error.hpp"

namespace spsim::analysis {

using namespace sim;
using fields::check_keys;
using fields::get_latency_us;
using fields::get_nonnegative;
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
  check_keys(j, path,
             {"name", "description", "peak_tflops", "hbm_bytes", "hbm_GBps", "efficiency",
              "launch_overhead_us", "nvlink", "source"});
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
  return g;
}

}  // namespace spsim::analysis
