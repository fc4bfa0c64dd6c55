// The roofline compute model of one op.
#include "sim/compute/compute_model.hpp"

#include <algorithm>

#include "runtime/core/error.hpp"

namespace spsim::sim {

std::string peak_key(rt::DType dtype) {
  switch (dtype) {
    case rt::DType::bf16:
      return "bf16";
    case rt::DType::f16:
      return "fp16";
    case rt::DType::f32:
      return "fp32";  // PyTorch's default: no TF32 for float32 matmuls
    case rt::DType::f64:
      return "fp64";
  }
  return "?";
}

ComputeModel::ComputeModel(GpuSpec gpu, rt::DType dtype, const std::string& where) : gpu_(std::move(gpu)) {
  const auto key = peak_key(dtype);
  const auto it = gpu_.peak_flops.find(key);
  if (it == gpu_.peak_flops.end() || !(it->second > 0)) {
    std::string have;
    for (const auto& [k, v] : gpu_.peak_flops) have += (have.empty() ? "" : ", ") + k;
    throw InputError(where, "GPU '" + gpu_.name + "' lists no peak for dtype " + key + "; it has: " + have);
  }
  peak_flops_ = it->second;
}

Time ComputeModel::duration(const rt::trace::ComputeOp& op) const {
  if (op.skipped) return Time{};
  const double eff = gpu_.op_efficiency(op.op_class);
  const double compute_s = op.flops / (peak_flops_ * eff);                         // seconds
  const double memory_s = static_cast<double>(op.bytes()) / (gpu_.hbm_Bps * eff);  // seconds
  return Time::from_seconds(std::max(compute_s, memory_s)) + gpu_.launch_overhead;
}

}  // namespace spsim::sim
