// The compute model of one op: kernel models for fused attention and GEMMs, a roofline for the rest.
#include "sim/compute/compute_model.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "runtime/core/error.hpp"
#include "runtime/core/hash.hpp"
#include "sim/compute/gemm_kernel.hpp"

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

namespace {
struct LaunchKey {
  rt::AttentionLaunch launch;
  rt::OpClass op_class;
  double bytes;
  bool operator==(const LaunchKey&) const = default;
};
struct LaunchHash {
  std::size_t operator()(const LaunchKey& k) const {
    rt::WordHash h;
    const auto& l = k.launch;
    for (std::int64_t v : {l.bq, l.bk, l.sq, l.sk, l.d, l.dv, l.offset}) h.add(static_cast<std::uint64_t>(v));
    h.add(static_cast<std::uint64_t>(l.mask)).add(static_cast<std::uint64_t>(k.op_class));
    return h.add_double(l.fraction).add_double(k.bytes).value();
  }
};
}  // namespace

struct ComputeModel::Cache {
  std::mutex mutex;
  std::unordered_map<LaunchKey, double, LaunchHash> seconds;
};

ComputeModel::ComputeModel(GpuSpec gpu, rt::DType dtype, const std::string& where,
                           const std::string& attention_kernel, const std::string& kernel_where)
    : gpu_(std::move(gpu)), dtype_(dtype), cache_(std::make_shared<Cache>()) {
  const auto key = peak_key(dtype);
  const auto it = gpu_.peak_flops.find(key);
  if (it == gpu_.peak_flops.end() || !(it->second > 0)) {
    std::string have;
    for (const auto& [k, v] : gpu_.peak_flops) have += (have.empty() ? "" : ", ") + k;
    throw InputError(where, "GPU '" + gpu_.name + "' lists no peak for dtype " + key + "; it has: " + have);
  }
  peak_flops_ = it->second;
  tensor_dtype_ = dtype == rt::DType::bf16 || dtype == rt::DType::f16;
  if (!gpu_.sm) {
    if (!attention_kernel.empty())
      throw InputError(kernel_where, "GPU '" + gpu_.name +
                                         "' lists no per-SM facts (\"sm\"), so no attention "
                                         "kernel model applies; remove '" +
                                         attention_kernel + "'");
    return;
  }
  const std::string name = attention_kernel.empty() ? gpu_.default_attention_kernel : attention_kernel;
  if (name.empty()) return;
  family_ = find_kernel_family(name);
  const auto p = gpu_.attention_kernels.find(name);
  if (!family_ || p == gpu_.attention_kernels.end()) {
    std::string have;
    for (const auto& [k, v] : gpu_.attention_kernels) have += (have.empty() ? "" : ", ") + k;
    throw InputError(kernel_where, "GPU '" + gpu_.name + "' has no fitted parameters for attention kernel '" +
                                       name + "'; it has: " + (have.empty() ? "none" : have));
  }
  params_ = p->second;
}

double ComputeModel::roofline_s(rt::OpClass op_class, double flops, double bytes) const {
  const double eff = gpu_.op_efficiency(op_class);
  const double compute_s = flops / (peak_flops_ * eff);  // seconds
  const double memory_s = bytes / (gpu_.hbm_Bps * eff);  // seconds
  return std::max(compute_s, memory_s);
}

double ComputeModel::attention_s(const rt::AttentionLaunch& l, rt::OpClass op_class, double bytes) const {
  // The memory-bound kernels around the fused one are a roofline of their own; the fused kernel's
  // time does not depend on them, so it is memoised without (one schedule per launch shape, whatever
  // the accumulation passes).
  const double aux = l.aux_bytes > 0 ? roofline_s(rt::OpClass::copy, 0, static_cast<double>(l.aux_bytes)) : 0;
  rt::AttentionLaunch fused = l;
  fused.aux_bytes = 0;
  const LaunchKey key{fused, op_class, bytes};
  {
    const std::lock_guard lock(cache_->mutex);
    if (const auto it = cache_->seconds.find(key); it != cache_->seconds.end()) return it->second + aux;
  }
  const auto pass =
      op_class == rt::OpClass::attention_forward ? AttentionPass::forward : AttentionPass::backward;
  const double s =
      attention_kernel_s(fused, pass, *family_, params_, *gpu_.sm, peak_flops_, gpu_.hbm_Bps, bytes);
  const std::lock_guard lock(cache_->mutex);
  cache_->seconds.emplace(key, s);
  return s + aux;
}

double ComputeModel::kernel_s(rt::OpClass op_class, double flops, double bytes,
                              const rt::KernelShapes& k) const {
  const bool attention =
      op_class == rt::OpClass::attention_forward || op_class == rt::OpClass::attention_backward;
  if (attention && k.attention && family_ && tensor_dtype_) return attention_s(*k.attention, op_class, bytes);
  // A GEMM op's memory-bound side kernels (a bias gradient's reduction) run after its GEMMs.
  const double aux = k.aux_bytes > 0 ? roofline_s(rt::OpClass::copy, 0, static_cast<double>(k.aux_bytes)) : 0;
  if (op_class == rt::OpClass::gemm && !k.gemms.empty() && gpu_.sm && gpu_.gemm && tensor_dtype_) {
    double s = 0;
    const double out = static_cast<double>(rt::dtype_bytes(dtype_));
    for (const auto& g : k.gemms)
      s += gemm_kernel_s(g, *gpu_.gemm, *gpu_.sm, peak_flops_, gpu_.hbm_Bps,
                         g.c_bytes > 0 ? static_cast<double>(g.c_bytes) : out);
    return std::max(s, bytes / gpu_.hbm_Bps) + aux;
  }
  return roofline_s(op_class, flops, bytes) + aux;
}

Time ComputeModel::duration(const rt::trace::ComputeOp& op) const {
  if (op.skipped) return Time{};
  return Time::from_seconds(kernel_s(op.op_class, op.flops, static_cast<double>(op.bytes()), op.kernels())) +
         static_cast<std::int64_t>(std::max(op.kernels().launches, 1)) * gpu_.launch_overhead;
}

double ComputeModel::duration_s(rt::OpClass op_class, double flops, double bytes,
                                const rt::KernelShapes& kernels) const {
  return kernel_s(op_class, flops, bytes, kernels) +
         gpu_.launch_overhead.seconds() * std::max(kernels.launches, 1);
}

}  // namespace spsim::sim
