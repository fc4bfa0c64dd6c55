// ComputeModel: how long one recorded Device op runs on a simulated GPU (DESIGN.md §6).
//
// Fused attention and GEMMs go through kernel models when the GPU lists its per-SM facts (`sm` in
// configs/hardware/gpus/*.json) and the dtype runs on tensor cores (bf16, fp16):
//   attention  sim/compute/attention_kernel.hpp: tiles, tensor cores, SFU exponentials, FP32 softmax
//              work, shared memory, thread-block waves, per kernel family (fa2, fa3, fa4, cudnn) with
//              that family's fitted efficiencies on that GPU; plus the memory-bound kernels around
//              it (runtime/core/kernel_shape.hpp: aux_bytes) at the copy rate;
//   gemm       sim/compute/gemm_kernel.hpp: CUTLASS-style tiles, waves, fill and store per tile.
// Every other op (and every op of a GPU without the facts, or in fp32/fp64) is a roofline with
// per-op-class efficiencies:
//
//   time(op) = max( flops / (peak[dtype] · eff[class]),  bytes / (hbm_Bps · eff[class]) )
//
// and every op pays the GPU's launch overhead once per kernel it launches. flops and bytes are the
// trace's (runtime/cost.hpp: each operand moved once, an FMA is 2 flops). A skipped op (fully masked
// attention block) is never launched and takes 0 (runtime/core/trace_format.hpp).
//
// Kernel-model results are memoised per launch shape (a ring step repeats the same few blocks), so
// the model's cost does not grow with the number of ranks × steps.
#pragma once

#include <memory>
#include <string>

#include "runtime/core/kernel_shape.hpp"
#include "runtime/core/trace_format.hpp"
#include "runtime/core/types.hpp"
#include "sim/cluster/hardware.hpp"
#include "sim/compute/attention_kernel.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

class ComputeModel {
 public:
  // Throws InputError at `where` when the GPU lists no peak for `dtype`, and at `kernel_where` when
  // `attention_kernel` (empty: the GPU's default) names a family the GPU has no parameters for.
  ComputeModel(GpuSpec gpu, rt::DType dtype, const std::string& where = "workload.dtype",
               const std::string& attention_kernel = "",
               const std::string& kernel_where = "simulation.attention_kernel");

  [[nodiscard]] Time duration(const rt::trace::ComputeOp& op) const;
  // The same model in seconds for an op of `op_class` with these FLOPs, bytes and kernels (never
  // skipped): what the closed forms charge (analysis/closed_form/hardware_model.hpp).
  [[nodiscard]] double duration_s(rt::OpClass op_class, double flops, double bytes,
                                  const rt::KernelShapes& kernels = {}) const;
  [[nodiscard]] double peak_flops() const { return peak_flops_; }  // FLOP/s for the dtype
  [[nodiscard]] const GpuSpec& gpu() const { return gpu_; }
  // The attention kernel family in use ("" when attention is priced by the roofline).
  [[nodiscard]] const std::string& attention_kernel() const {
    return family_ && tensor_dtype_ ? family_->name : none_;
  }

 private:
  // Seconds without the launch overhead.
  [[nodiscard]] double kernel_s(rt::OpClass op_class, double flops, double bytes,
                                const rt::KernelShapes& k) const;
  [[nodiscard]] double roofline_s(rt::OpClass op_class, double flops, double bytes) const;
  [[nodiscard]] double attention_s(const rt::AttentionLaunch& l, rt::OpClass op_class, double bytes) const;
  GpuSpec gpu_;
  rt::DType dtype_;
  double peak_flops_ = 0;  // FLOP/s
  bool tensor_dtype_ = false;
  const KernelFamily* family_ = nullptr;  // into the static kernel_families()
  AttentionKernelParams params_;  // the family's constants on this GPU (a copy: the model is copyable)
  std::string none_;
  struct Cache;
  std::shared_ptr<Cache> cache_;
};

// The GPU JSON's peak_tflops key for a dtype: bf16, fp16, fp32, fp64.
[[nodiscard]] std::string peak_key(rt::DType dtype);

}  // namespace spsim::sim
