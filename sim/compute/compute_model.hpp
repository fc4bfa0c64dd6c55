// ComputeModel: how long one recorded Device op runs on a simulated GPU (DESIGN.md §6).
//
// Roofline with per-op-class efficiencies (the GPU's JSON, configs/hardware/gpus/):
//
//   time(op) = max( flops / (peak[dtype] · eff[class]),  bytes / (hbm_Bps · eff[class]) ) + launch
//
// flops and bytes are the trace's (runtime/cost.hpp: each operand moved once, an FMA is 2 flops).
// One efficiency per class scales both roofs: it stands for what a real kernel of that class loses to
// tiling, occupancy and re-reads, whichever roof binds. A skipped op (fully masked attention block)
// is never launched and takes 0 (runtime/core/trace_format.hpp).
//
// Calibration of the fused attention classes (flash-attention, Llama-3.1-8B attention shape: 32
// query heads, 8 KV heads, head dim 128, bf16, causal, batch 1, 8192 tokens; A100 373.4 it/s forward,
// 94.7 it/s forward+backward; shared/data/hardware-and-measurements.md):
//   forward FLOPs  = 4 · s² · d · H · (unmasked fraction)        (FlashAttention-2 paper, §4.1)
//                  = 4 · 8192² · 128 · 32 · (8193 / 16384)     = 5.498e11
//   backward FLOPs = 2.5 × forward (five GEMMs instead of two)   = 1.374e12
//   A100 (312 TFLOP/s bf16): forward 5.498e11 × 373.4 /s = 205.3 TFLOP/s → eff 0.66;
//   forward+backward (5.498e11 + 1.374e12) × 94.7 /s = 182.2 TFLOP/s; with the forward at 0.66 the
//   backward takes 1/94.7 − 1/373.4 = 7.88 ms → 174.3 TFLOP/s → eff 0.56.
// tests/sim/compute_test.cpp checks the model reproduces both rates within 10%.
#pragma once

#include <string>

#include "runtime/core/trace_format.hpp"
#include "runtime/core/types.hpp"
#include "sim/cluster/hardware.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

class ComputeModel {
 public:
  // Throws InputError at `where` when the GPU lists no peak for `dtype`.
  ComputeModel(GpuSpec gpu, rt::DType dtype, const std::string& where = "workload.dtype");

  [[nodiscard]] Time duration(const rt::trace::ComputeOp& op) const;
  // The same model in seconds for an op of `op_class` with these FLOPs and bytes (never skipped): what
  // the closed forms charge (analysis/closed_form/hardware_model.hpp).
  [[nodiscard]] double duration_s(rt::OpClass op_class, double flops, double bytes) const;
  [[nodiscard]] double peak_flops() const { return peak_flops_; }  // FLOP/s for the dtype
  [[nodiscard]] const GpuSpec& gpu() const { return gpu_; }

 private:
  // max(flops / (peak · eff), bytes / (HBM · eff)), seconds, without the launch overhead.
  [[nodiscard]] double roofline_s(rt::OpClass op_class, double flops, double bytes) const;
  GpuSpec gpu_;
  double peak_flops_ = 0;  // FLOP/s
};

// The GPU JSON's peak_tflops key for a dtype: bf16, fp16, fp32, fp64.
[[nodiscard]] std::string peak_key(rt::DType dtype);

}  // namespace spsim::sim
