// simulate() on Ring Attention: the causal load imbalance of the contiguous layout and the balance of
// zigzag show in the simulated compute times, and the K/V passes overlap the block computation.
#include <doctest/doctest.h>

#include <algorithm>

#include "analysis/config/cluster.hpp"
#include "analysis/simulate/simulate.hpp"
#include "sim/cluster/config.hpp"

using namespace spsim;

namespace {

// Llama-3-8B attention (32 heads, 8 kv heads, head dim 128), causal, bf16, P = 8 on one DGX H100.
analysis::Config ring(const std::string& layout, std::int64_t seq) {
  analysis::Config c;
  c.name = "ring-" + layout;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.kv_heads = 8;
  c.model.head_dim = 128;
  c.model.ffn_hidden = 14336;
  c.workload.seq_len = seq;
  c.workload.causal = true;
  c.workload.dtype = rt::DType::bf16;
  c.workload.scope = models::Scope::attention;
  c.cluster = analysis::preset_cluster("dgx-h100", 1);
  c.strategy.name = "ring";
  c.strategy.degree = 8;
  c.strategy.options = {{"layout", layout}};
  return c;
}

struct Spread {
  double max = 0, mean = 0, min = 1e300;
};

Spread compute_spread(const analysis::SimSummary& s) {
  Spread out;
  for (const auto& r : s.ranks) {
    out.max = std::max(out.max, r.compute_s);
    out.min = std::min(out.min, r.compute_s);
    out.mean += r.compute_s / static_cast<double>(s.ranks.size());
  }
  return out;
}

}  // namespace

// Causal work per rank (tests/strategies derive it from the traces): with the contiguous layout rank r
// computes r full blocks and one half (diagonal) block, 2r+1 half-blocks; the mean is P half-blocks and
// the busiest rank 2P−1, so busiest / mean = (2P−1)/P = 15/8 at P = 8. Zigzag gives every rank the same
// (2P−1)h² + h(h+1) allowed pairs. At 64K tokens the attention blocks dominate each rank's compute, so
// the simulated compute times show the same ratios (the per-step merges and launch overheads, a few
// percent, are what keeps them from being exact).
TEST_CASE("ring attention: simulated compute shows the contiguous imbalance and the zigzag balance") {
  const double p = 8;
  const auto contiguous = compute_spread(
      analysis::simulate(ring("contiguous", 65536), spsim::analysis::SimulateOptions::without_trace_file()));
  CHECK(contiguous.max / contiguous.mean == doctest::Approx((2 * p - 1) / p).epsilon(0.03));
  const auto zigzag = compute_spread(
      analysis::simulate(ring("zigzag", 65536), spsim::analysis::SimulateOptions::without_trace_file()));
  MESSAGE("contiguous busiest/mean " << contiguous.max / contiguous.mean << ", zigzag max/min "
                                     << zigzag.max / zigzag.min);
  // Not exactly 1: an earlier owner's half block keeps every query row and half the keys, a later
  // owner's half the rows and every key, so their kernels' CTA counts, merges and dq accumulation
  // passes differ (a few percent between the ranks that see more of one kind).
  CHECK(zigzag.max / zigzag.min == doctest::Approx(1.0).epsilon(0.04));
}

// Each step's K/V transfer (2·(s/P)·Hkv·d·2 bytes = 4 MiB at 64K over NVLink) takes far less than the
// step's block computation. Forward, every pass is launched before the block kernel it overlaps, so
// all of it is hidden. Backward, step j's comm stream runs the dK/dV accumulator of step j−1 first
// and the next K/V pass after it; by then the block kernel holds the SMs, so that pass waits for the
// kernel's end (the replay's launch rule) and is exposed, less the accumulator add it runs beside: at
// steps j = 1 … P−2, P−2 passes. A K/V pass moves |k| + |v|; 2(P−1) of them in all, and P passes of
// the fp32 dK/dV accumulators (backward_sends = separate, ring-flash-attention) at a = 2 times the
// bytes, so one K/V pass takes comm / (2(P−1) + aP). The last accumulator hop home (a passes) is
// exposed too, and a rank whose neighbour is late waits longer (the ranks see 4.6–8.8 passes here);
// without the rule only that last hop would show.
TEST_CASE("ring attention: forward passes overlap the block computation; backward ones queue behind it") {
  const double p = 8;
  auto fwd = ring("zigzag", 65536);
  fwd.workload.passes = models::Passes::fwd;
  const auto f = analysis::simulate(fwd, spsim::analysis::SimulateOptions::without_trace_file());
  for (const auto& r : f.ranks) {
    CAPTURE(r.rank);
    CHECK(r.comm_s > 0);
    CHECK(r.exposed_comm_s < 0.25 * r.comm_s);
  }
  const auto fb =
      analysis::simulate(ring("zigzag", 65536), spsim::analysis::SimulateOptions::without_trace_file());
  for (const auto& r : fb.ranks) {
    CAPTURE(r.rank);
    const double a = 2, pass = r.comm_s / (2 * (p - 1) + a * p);
    MESSAGE("rank " << r.rank << ": exposed " << r.exposed_comm_s / pass << " passes");
    CHECK(r.exposed_comm_s > 0.5 * (p - 2) * pass);
    CHECK(r.exposed_comm_s < 1.2 * (p - 2 + a) * pass);
  }
  // backward_sends = packed (TransformerEngine's order): the accumulator and the next K/V block leave
  // in one launch at the step's start, ahead of the block's kernel, so backward hides them as forward
  // does; what stays exposed is the last dK/dV hop home and its add, about one pass.
  auto packed = ring("zigzag", 65536);
  packed.strategy.options["backward_sends"] = "packed";
  const auto pk = analysis::simulate(packed, spsim::analysis::SimulateOptions::without_trace_file());
  for (const auto& r : pk.ranks) {
    CAPTURE(r.rank);
    const double pass = r.comm_s / (3 * (p - 1));
    CHECK(r.exposed_comm_s < 2 * pass);
  }
  CHECK(pk.step_time_s < fb.step_time_s);
}
