// The time of one GEMM kernel, the way CUTLASS/cuBLAS kernels run (DESIGN.md §6).
//
// The output is cut into Mt × Nt tiles, one thread block (CTA) each, over the batch; a CTA walks K in
// steps of 64 and then stores its tile:
//
//   cta   = ceil(K / 64) · 2·Mt·Nt·64 / (tensor FLOP per clock per SM · mma_efficiency) / clock
//           + fill_us                                   (the pipeline's first loads, a memory latency)
//           + Mt·Nt·c bytes / (HBM bandwidth / SMs)      (the tile store, every SM storing at once: c the
//                                                        dtype's size, or 8 for an fp32 accumulator read
//                                                        and written back, GemmShape::c_bytes)
//   time  = ceil(tiles / SMs) · cta                     (wave quantisation)
//
// taking the fastest of the tile shapes cuBLAS's heuristics choose among (128×256, 256×128, 128×128,
// 128×64, 64×128, 64×64), floored by the op's HBM traffic. Small K pays the fill and the store on
// few MMA steps, small M or N leaves SMs idle: both lower the efficiency where real GEMMs lose it.
#pragma once

#include "runtime/core/kernel_shape.hpp"
#include "sim/cluster/hardware.hpp"

namespace spsim::sim {

// Seconds of one GEMM kernel (no launch overhead); `tensor_flops` the dtype's peak FLOP/s; `out_bytes`
// the output element size.
[[nodiscard]] double gemm_kernel_s(const rt::GemmShape& g, const GemmParams& params, const SmSpec& sm,
                                   double tensor_flops, double hbm_Bps, double out_bytes);

}  // namespace spsim::sim
