// The fused-attention and GEMM kernel models against closed forms written out here: tile counts under
// causal masks, wave quantisation, the per-tile resource maxima, and the head-dimension mechanism.
#include "sim/compute/attention_kernel.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "analysis/config/hardware.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/kernel_shape.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/compute/gemm_kernel.hpp"
#include "tests/sim/replay_helpers.hpp"

using namespace replay_test;
using spsim::sim::AttentionKernelParams;
using spsim::sim::AttentionPass;
using spsim::sim::SmSpec;

namespace {

// One SM at 1 GHz whose only cost is the tensor cores: SFU, FP32 and shared memory effectively
// infinite, HBM effectively infinite (no prologue/epilogue time), no CTA overhead.
SmSpec mma_only_sm(int sms = 1) {
  return SmSpec{sms, 1e9, 1e30, 1e30, 1e30};
}
AttentionKernelParams ideal() {
  return AttentionKernelParams{1, 1, 0, 0, 0, 0, 0, ""};
}
const spsim::sim::KernelFamily& fa3() {
  return *spsim::sim::find_kernel_family("fa3");
}

rt::AttentionLaunch launch(std::int64_t bq, std::int64_t s, std::int64_t d, bool causal) {
  rt::AttentionLaunch l{bq, bq, s, s, d, d};
  if (causal) l.mask = rt::AttentionLaunch::Mask::causal;
  return l;
}

}  // namespace

TEST_CASE("list scheduling: equal blocks quantise into waves; the issue order decides the tail") {
  using spsim::sim::CtaOrder;
  using spsim::sim::schedule_cycles;
  // 10 blocks of 7 cycles on 4 SMs: ceil(10/4) = 3 waves → 21 cycles, in either order.
  CHECK(schedule_cycles({7.0}, 10, 4, CtaOrder::longest_first) == doctest::Approx(21));
  CHECK(schedule_cycles({7.0}, 10, 4, CtaOrder::grid) == doctest::Approx(21));
  // 4 heads of (3, 5) on 4 SMs, longest first: the four 5s, then a 3 each → 8.
  CHECK(schedule_cycles({3.0, 5.0}, 4, 4, CtaOrder::longest_first) == doctest::Approx(8));
  // In launch order 3, 5, 3, 5, 3, 5, 3, 5: SMs take 3, 5, 3, 5; the next 3 joins an SM free at 3
  // (→ 6), the 5 the other one (→ 8), then 3 on the SM free at 5 (→ 8) and 5 on the one free at 5
  // (→ 10): makespan 10.
  CHECK(schedule_cycles({3.0, 5.0}, 4, 4, CtaOrder::grid) == doctest::Approx(10));
  // A head of nine 1s then a 10, on 2 SMs: longest first puts 10 on one SM, the 1s on the other → 10;
  // in launch order the 1s spread over both (→ 4.5 each: 5 and 4) and the 10 starts at 4 → 14.
  CHECK(schedule_cycles({1, 1, 1, 1, 1, 1, 1, 1, 1, 10.0}, 1, 2, CtaOrder::longest_first) ==
        doctest::Approx(10));
  CHECK(schedule_cycles({1, 1, 1, 1, 1, 1, 1, 1, 1, 10.0}, 1, 2, CtaOrder::grid) == doctest::Approx(14));
  CHECK(schedule_cycles({}, 4, 4, CtaOrder::grid) == 0);
}

TEST_CASE("co-resident blocks share their SM; a lone block runs at the SM's full rate") {
  using spsim::sim::CtaOrder;
  using spsim::sim::schedule_cycles;
  // One SM, two slots, blocks 1 and 10: both run at half rate until the 1 ends (t = 2, the 10 has 9
  // left), then the 10 alone at full rate: 2 + 9 = 11, the total work (the SM never idles).
  CHECK(schedule_cycles({1.0, 10.0}, 1, 1, CtaOrder::grid, 2) == doctest::Approx(11));
  // Two SMs, blocks 3, 5, 3, 5, 3, 5 handed out breadth first: SM0 gets 3 and 3, SM1 5 and 5, the
  // remaining 3 and 5 go to SM0 when its pair ends at 6 (3 and 5 together: the 3 ends at 12, the 5 at
  // 14) while SM1's pair ends at 10: makespan 14.
  CHECK(schedule_cycles({3.0, 5.0}, 3, 2, CtaOrder::grid, 2) == doctest::Approx(14));
  // With one slot per SM it is the list schedule: SM0 3, SM1 5, then 3 (SM0, → 6), 5 (SM1 at 5, → 10),
  // 3 (SM0 at 6, → 9), 5 (SM0 at 9, → 14).
  CHECK(schedule_cycles({3.0, 5.0}, 3, 2, CtaOrder::grid, 1) == doctest::Approx(14));
  // Equal blocks (a non-causal launch) in pairs: a pair shares its SM for 2 × 7 = 14 cycles. Ten
  // blocks on two SMs are five pairs, SM0 running pairs 1, 3, 5 → 42; three blocks are handed out
  // breadth first (SM0 two, SM1 one) → 14; one block alone on an SM runs at the full rate → 7.
  CHECK(schedule_cycles({7.0}, 10, 2, CtaOrder::grid, 2) == doctest::Approx(42));
  CHECK(schedule_cycles({7.0, 7.0}, 5, 2, CtaOrder::longest_first, 2) == doctest::Approx(42));
  CHECK(schedule_cycles({7.0}, 3, 2, CtaOrder::grid, 2) == doctest::Approx(14));
  CHECK(schedule_cycles({7.0}, 1, 2, CtaOrder::grid, 2) == doctest::Approx(7));
  // Nine blocks: four full pairs (SM0 and SM1 twice: 28), then the ninth alone on SM0 → 35.
  CHECK(schedule_cycles({7.0}, 9, 2, CtaOrder::grid, 2) == doctest::Approx(35));
  // The closed form for equal blocks is the event simulation's result, to the event simulation's tick
  // (it counts work in ticks of 2^-30 of the power of two above the longest block: a block is off by at
  // most half a tick, under 2^-30 ≈ 9.3e-10 of it, and so is a sum of equal blocks).
  using spsim::sim::schedule_cycles_events;
  for (const double w : {7.0, 0.1, 1234.5678, 3.0e7 / 7})
    for (const std::int64_t repeat : {1, 5, 131, 132, 133, 1000, 4321})
      for (const int sms : {1, 7, 132})
        for (const int k : {1, 2, 3}) {
          CAPTURE(w);
          CAPTURE(repeat);
          CAPTURE(sms);
          CAPTURE(k);
          CHECK(
              schedule_cycles({w, w}, repeat, sms, CtaOrder::grid, k) ==
              doctest::Approx(schedule_cycles_events({w, w}, repeat, sms, CtaOrder::grid, k)).epsilon(1e-9));
        }
}

TEST_CASE("forward tiles: a causal block computes its lower triangle of tiles, diagonals whole") {
  // fa3, d = 128, causal: 128 × 128 tiles. s = 1024 → 8 query blocks; block m computes m + 1 key
  // tiles: 36 tiles per head. Tile time on the tensor cores: 2·128·128·(128 + 128) FLOPs at
  // `tc` FLOP per cycle. One SM: everything runs in sequence.
  const double tc = 1024;  // tensor FLOP per clock per SM
  const double tile = 2.0 * 128 * 128 * 256 / tc;
  const SmSpec sm = mma_only_sm();
  const double flops_per_s = tc * sm.clock_Hz * sm.sm_count;
  const double t_causal = spsim::sim::attention_kernel_s(launch(3, 1024, 128, true), AttentionPass::forward,
                                                         fa3(), ideal(), sm, flops_per_s, 1e30, 0);
  CHECK(t_causal == doctest::Approx(3 * 36 * tile / 1e9).epsilon(1e-12));
  // Non-causal: 128 × 176 tiles, 8 query blocks × ceil(1024/176) = 6 key tiles.
  const double tile_nc = 2.0 * 128 * 176 * 256 / tc;
  const double t_full = spsim::sim::attention_kernel_s(launch(3, 1024, 128, false), AttentionPass::forward,
                                                       fa3(), ideal(), sm, flops_per_s, 1e30, 0);
  CHECK(t_full == doctest::Approx(3 * 8 * 6 * tile_nc / 1e9).epsilon(1e-12));
}

TEST_CASE("a shifted causal mask: offset 128 adds one key tile to every query block") {
  const double tc = 1024, tile = 2.0 * 128 * 128 * 256 / tc;
  rt::AttentionLaunch l = launch(1, 1024, 128, true);
  l.sk = 1152;
  l.offset = 128;  // bottom-right aligned: key j visible to query i iff j <= i + 128
  const SmSpec sm = mma_only_sm();
  const double t =
      spsim::sim::attention_kernel_s(l, AttentionPass::forward, fa3(), ideal(), sm, tc * 1e9, 1e30, 0);
  CHECK(t == doctest::Approx((36 + 8) * tile / 1e9).epsilon(1e-12));
  // Backward walks key blocks with 64 × 128 tiles (fa3 backward d = 128), 2·64·128·(3·128 + 2·128)
  // FLOPs each: key block n (of 9) is seen by query block m (of 16) iff 128n <= 64m + 63 + 128, i.e.
  // m >= 2n − 2: 16 + 16 + 14 + 12 + … + 2 = 88 tiles.
  const double tile_b = 2.0 * 64 * 128 * 640 / tc;
  double tiles = 0;
  for (int n = 0; n < 9; ++n) tiles += 16 - std::max(0, 2 * n - 2);
  CHECK(tiles == 88);
  const double tb =
      spsim::sim::attention_kernel_s(l, AttentionPass::backward, fa3(), ideal(), sm, tc * 1e9, 1e30, 0);
  CHECK(tb == doctest::Approx(tiles * tile_b / 1e9).epsilon(1e-12));
}

TEST_CASE("a tile takes the slowest of MMA, softmax and shared memory, plus what does not overlap") {
  // fa3 forward d = 64: 192 × 128 tiles. Per tile: MMA 2·192·128·128 / 4096 = 1536 cycles; SFU
  // 192·128 / 16 = 1536; FP32 (192·128·4 + 192·64) / 128 = 864; shared memory
  // 2·(192·64 + 128·128) / 128 = 448. Softmax = max(SFU, FP32) = 1536.
  const SmSpec sm{1, 1e9, 16, 128, 128};
  const double tc = 4096;
  AttentionKernelParams p = ideal();
  for (double overlap : {0.0, 0.5, 1.0}) {
    p.overlap_fwd = overlap;
    const double tile = std::max(1536.0, 1536.0) + (1 - overlap) * 1536;
    rt::AttentionLaunch l = launch(1, 192, 64, false);
    l.sk = 128;  // one tile
    const double t =
        spsim::sim::attention_kernel_s(l, AttentionPass::forward, fa3(), p, sm, tc * 1e9, 1e30, 0);
    CHECK(t == doctest::Approx(tile / 1e9).epsilon(1e-12));
  }
}

TEST_CASE("the head-dimension dependence comes from the exponentials, not from a per-dimension factor") {
  // Same tile, same parameters: at d = 64 the 16 exponentials per SM per clock take as long as the
  // MMA, at d = 256 a quarter: the achieved fraction of the tensor-core peak rises with d.
  const SmSpec sm{132, 1.83e9, 16, 128, 128};
  const double peak = 4096 * sm.clock_Hz * sm.sm_count;
  const AttentionKernelParams p{0.8, 0.8, 0.0, 0.0, 0, 0, 0, ""};
  double previous = 0;
  for (std::int64_t d : {32, 64, 128, 256}) {
    CAPTURE(d);
    const auto l = launch(32 * 128 / d, 8192, d, false);
    const double flops = 4.0 * 8192 * 8192 * static_cast<double>(d) * static_cast<double>(l.bq);
    const double t =
        spsim::sim::attention_kernel_s(l, AttentionPass::forward, fa3(), p, sm, peak, 3.35e12, 0);
    const double fraction = flops / t / peak;
    CHECK(fraction > previous);
    CHECK(fraction < 0.8);  // never above the MMA efficiency
    previous = fraction;
  }
}

TEST_CASE("GEMM: waves of tiles, the fill and the store per tile") {
  // 2 SMs at 1 GHz, 1024 tensor FLOP per clock per SM, efficiency 1, fill 1 µs, HBM 2e12 B/s
  // (1e12 per SM). m = n = 256, k = 128: the 128 × 256 tile gives 2 tiles → 1 wave; per CTA
  // 2 k-steps of 2·128·256·64 / 1024 cycles + 1 µs + 128·256·2 bytes / 1e12 B/s.
  const SmSpec sm{2, 1e9, 16, 128, 128};
  const spsim::sim::GemmParams p{1, 1.0, ""};
  const double cta = 2 * (2.0 * 128 * 256 * 64 / 1024) / 1e9 + 1e-6 + 128.0 * 256 * 2 / 1e12;
  // The other tiles (256 × 128: the same; 128 × 128: 4 tiles, 2 waves of a smaller CTA) are slower.
  const double t = spsim::sim::gemm_kernel_s({1, 256, 256, 128}, p, sm, 1024 * 1e9 * 2, 2e12, 2);
  CHECK(t == doctest::Approx(cta).epsilon(1e-12));
  // Batch 3: 6 tiles on 2 SMs → 3 waves.
  CHECK(spsim::sim::gemm_kernel_s({3, 256, 256, 128}, p, sm, 1024 * 1e9 * 2, 2e12, 2) ==
        doctest::Approx(3 * cta).epsilon(1e-12));
}

TEST_CASE("GEMM: an fp32 accumulator read and written back (c_bytes 8) lengthens each CTA's store") {
  // The shape of the test above, one wave: the store moves 128·256 elements at 8 bytes instead of 2,
  // 128·256·6 bytes more at the SM's 1e12 B/s share of HBM.
  const SmSpec sm{2, 1e9, 16, 128, 128};
  const spsim::sim::GemmParams p{1, 1.0, ""};
  const double bf16 = spsim::sim::gemm_kernel_s({1, 256, 256, 128}, p, sm, 1024 * 1e9 * 2, 2e12, 2);
  const double fp32_acc = spsim::sim::gemm_kernel_s({1, 256, 256, 128, 8}, p, sm, 1024 * 1e9 * 2, 2e12, 8);
  CHECK(fp32_acc - bf16 == doctest::Approx(128.0 * 256 * 6 / 1e12).epsilon(1e-9));
}

TEST_CASE("an attention kernel family the GPU has no parameters for is an input error") {
  const GpuSpec a100 = spsim::analysis::load_gpu("a100-sxm4-80gb", "test");
  CHECK_THROWS_WITH_AS(ComputeModel(a100, rt::DType::bf16, "workload.dtype", "fa3"),
                       doctest::Contains("no fitted parameters for attention kernel 'fa3'; it has: fa2"),
                       InputError);
  CHECK(ComputeModel(a100, rt::DType::bf16).attention_kernel() == "fa2");  // the GPU's default
}
