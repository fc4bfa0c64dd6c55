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

double ComputeModel::roofline_s(rt::OpClass op_class, double flops, double bytes) const {
  const double eff = gpu_.op_efficiency(op_class);
  const double compute_s = flops / (peak_flops_ * eff);  // seconds
  const double memory_s = bytes / (gpu_.hbm_Bps * eff);  // seconds
  return std::max(compute_s, memory_s);
}

Time ComputeModel::duration(const rt::trace::ComputeOp& op) const {
  if (op.skipped) return Time{};
  return Time::from_seconds(roofline_s(op.op_class, op.flops, static_cast<double>(op.bytes()))) +
         gpu_.launch_overhead;
}

double ComputeModel::duration_s(rt::OpClass op_class, double flops, double bytes) const {
  return roofline_s(op_class, flops, bytes) + gpu_.launch_overhead.seconds();
}

}  // namespace spsim::sim
