// The time of one fused-attention kernel (FlashAttention-2/3/4, cuDNN) from its launch shape and mask,
// built the way those kernels run (DESIGN.md §6; the figures in shared/data/kernel-benchmarks.md §5).
//
// Work is split into tiles of Br query rows × Bc keys (tile_shape: the families' tile sizes per head
// dimension). Forward: one thread block (CTA) per (batch·head, query block) walks the key tiles;
// backward: one per (batch·head, key block) walks the query tiles. A tile that the mask hides
// entirely is skipped; a tile on a causal diagonal is computed whole. Per tile, in SM clock cycles:
//
//   mma   = tile FLOPs / (tensor FLOP per clock per SM · mma_efficiency)
//           forward 2·Br·Bc·(d + dv); backward 2·Br·Bc·(3d + 2dv) (S, dP, dV, dK, dQ)
//   exp   = Br·Bc · (1 − exp_emulated) / SFU exponentials per clock        (one exp per score)
//   fp32  = (Br·Bc · (n_fp32 + exp_emulated · n_poly) + acc) / FP32 lanes per clock
//           n_fp32: the online softmax's other FP32 instructions per score (forward 4: scale-and-
//           subtract, row max, row sum, convert; backward 5: P from lse, dP − D, the product, two
//           converts); n_poly = 8 per emulated exponential (range reduction and a cubic); acc the
//           accumulator work per tile: forward rescales O (Br·dv), backward adds into dQ (Br·d)
//   smem  = shared-memory bytes / bytes per clock: forward the K and V tiles read by each of the
//           `kv_reads` consumers and Q (2·(q_reads·Br·d + kv_reads·Bc·(d + dv))); backward
//           Q, dO twice, K twice, V once and the P and dS tiles written and read
//           (2·(Br·(2d + 2dv) + Bc·(2d + dv)/pair + 5·Br·Bc); FA4's 2-CTA backward would share K and V
//           over a CTA pair, pair = 2: 2,688 cycles per 128³ tile, the FA4 paper's figure; the rows
//           in configs/validation are its 1-CTA backward, pair = 1: 3,072 cycles, the paper's 3,328)
//   soft  = max(exp, fp32)                          (the SFU and the FP32 pipes issue in parallel)
//   tile  = max(mma, soft, smem) + (1 − overlap) · min(mma, soft)
//
// so FA2 (overlap ≈ 0: one warp group does both) pays the softmax on top of the MMA while FA3's
// ping-pong scheduling hides most of it; at small head dims the exponentials dominate (16 per SM per
// clock against 2,048–8,192 tensor FLOPs). A CTA takes its tiles' time, plus its prologue and
// epilogue HBM traffic (forward: load Q, store O and lse; backward: load K, V, store dK, dV) at its
// 1/SMs share of the HBM bandwidth, plus cta_overhead_cycles.
// CTAs are list-scheduled over the SMs in the order the family issues them (wave quantisation and the
// uneven rows of a causal mask): FA2 launches a plain grid, (block, batch, head) with the query (forward)
// or key (backward) block fastest, which the hardware hands out in that order, so a causal forward
// starts each head's short rows first and leaves long rows for the tail; FA3, FA4 and cuDNN run
// persistent schedulers that hand out the longest tiles first. The kernel is floored by its HBM
// traffic, and each launch pays the GPU's launch overhead.
#pragma once

#include <string>

#include "runtime/core/kernel_shape.hpp"
#include "sim/cluster/hardware.hpp"

namespace spsim::sim {

enum class AttentionPass : std::uint8_t { forward, backward };

// The order a kernel hands its CTAs to the SMs.
enum class CtaOrder : std::uint8_t {
  grid,           // launch order: for each batch·head, blocks 0, 1, … (FA2's blockIdx.x fastest)
  longest_first,  // a persistent scheduler issuing the longest CTAs first (FA3's LPT scheduler)
};

// The kernel families and what distinguishes them besides the fitted parameters.
struct KernelFamily {
  std::string name;         // fa2, fa3, fa4, cudnn
  std::string description;  // shown in simulate's header
  double q_reads = 0;       // forward: Q tile reads from shared memory per key tile
  double kv_reads = 1;  // forward: K and V tile reads per key tile (> 1: every warp of the CTA reads them)
  double bwd_pair = 1;  // backward: CTAs sharing one K/V operand (FA4's 2-CTA mode: 2)
  CtaOrder order = CtaOrder::longest_first;
};
[[nodiscard]] const std::vector<KernelFamily>& kernel_families();
[[nodiscard]] const KernelFamily* find_kernel_family(const std::string& name);

struct TileShape {
  int br = 128, bc = 128;
  int warps = 4;  // FA2's warps per CTA (each reads the whole K and V tile)
  // CTAs resident on one SM at a time, sharing it (schedule_cycles): FA2's 4-warp forward (up to 255
  // registers per thread: 2 × 128 threads fill the 64K registers; 64 KB of shared memory each at
  // d = 128) runs two; its 8-warp kernels and the persistent FA3/FA4/cuDNN kernels one.
  int ctas_per_sm = 1;
};
// The tile a family's kernel uses for a head dimension (flash-attention's launch templates: FA2
// sm80, FA3 hopper tile_size_fwd/bwd, FA4 sm100; cuDNN's are not public and taken as FA3's).
[[nodiscard]] TileShape tile_shape(const std::string& family, AttentionPass pass, std::int64_t d,
                                   std::int64_t dv, bool causal);

// Seconds of the kernel alone (no launch overhead) for `launch` on a GPU with `sm` facts, tensor rate
// `tensor_flops` (FLOP/s for the dtype) and HBM bandwidth `hbm_Bps`; `bytes` the op's HBM traffic.
[[nodiscard]] double attention_kernel_s(const rt::AttentionLaunch& launch, AttentionPass pass,
                                        const KernelFamily& family, const AttentionKernelParams& params,
                                        const SmSpec& sm, double tensor_flops, double hbm_Bps, double bytes);

// Schedule on `sms` SMs of `repeat` batch·heads, each a sequence of blocks of `work[i]` cycles of a
// whole SM (i = 0, 1, …): the makespan in cycles. `grid` issues head by head in the order given,
// `longest_first` all blocks by descending work. An SM holds up to `ctas_per_sm` blocks and shares
// its rate among them (n resident: each at 1/n, a lone block at the full rate); the next block enters
// the SM whose slot frees first. Exact up to 200,000 blocks, the fluid bound (total / sms, at least the
// longest block) beyond.
[[nodiscard]] double schedule_cycles(const std::vector<double>& work, std::int64_t repeat, int sms,
                                     CtaOrder order, int ctas_per_sm = 1);
// The event simulation schedule_cycles runs below 200,000 blocks, without its closed form for equal
// blocks (tests hold the closed form to it).
[[nodiscard]] double schedule_cycles_events(const std::vector<double>& work, std::int64_t repeat, int sms,
                                            CtaOrder order, int ctas_per_sm = 1);

}  // namespace spsim::sim
