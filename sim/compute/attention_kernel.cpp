// The fused-attention kernel model (see the header).
#include "sim/compute/attention_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

namespace spsim::sim {

namespace {
constexpr double kFp32Forward = 4;  // FP32 instructions per score besides the exponential (header)
constexpr double kFp32Backward = 5;
constexpr double kPolyExp = 8;    // FMA-unit instructions per emulated exponential
constexpr double kElemBytes = 2;  // bf16 / fp16 operands in shared memory

[[nodiscard]] std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
}  // namespace

const std::vector<KernelFamily>& kernel_families() {
  static const std::vector<KernelFamily> families = {
      {"fa2", "FlashAttention-2 (mma.sync, one warp group per tile; K/V read by every warp)", 0, 4, 1,
       CtaOrder::grid},
      {"fa3", "FlashAttention-3 (Hopper wgmma, warp specialisation, ping-pong softmax)", 1, 1},
      {"fa4", "FlashAttention-4 (Blackwell tcgen05, TMEM, part-software exponentials, 1-CTA backward)", 1, 1,
       1},
      {"cudnn", "cuDNN fused SDPA (flash-style; tiles not public, taken as FlashAttention-3's)", 1, 1},
  };
  return families;
}

const KernelFamily* find_kernel_family(const std::string& name) {
  for (const auto& f : kernel_families())
    if (f.name == name) return &f;
  return nullptr;
}

TileShape tile_shape(const std::string& family, AttentionPass pass, std::int64_t d_qk, std::int64_t dv,
                     bool causal) {
  const bool fwd = pass == AttentionPass::forward;
  const std::int64_t d = std::max(d_qk, dv);
  if (family == "fa2") {
    if (fwd)
      return d <= 64    ? TileShape{128, 128, 4, 2}
             : d <= 128 ? TileShape{128, 64, 4, 2}
                        : TileShape{128, 64, 8};
    return d <= 64 ? TileShape{128, 128} : d <= 128 ? TileShape{64, 128} : TileShape{64, 64};
  }
  if (family == "fa4") {
    if (fwd) return {128, 128};  // two 128-row Q tiles per CTA, each its own MMA tile
    // The backward keeps dK (Bc×d), dV (Bc×dv), S and dP (Bc×Br each) in fp32 in tensor memory:
    // 512 columns of 128 lanes. d = dv = 128 fills it with Br = 128; larger head dims halve Br.
    return {d_qk + dv + 2 * 128 <= 512 ? 128 : 64, 128};
  }
  // fa3 and cudnn
  if (fwd) {
    if (d <= 64) return {192, 128};
    if (d <= 128) return causal ? TileShape{128, 128} : TileShape{128, 176};
    if (d <= 192) return {128, 112};
    return {128, 80};
  }
  if (d <= 64) return {128, 128};
  if (d <= 128) return {64, 128};
  return {64, 64};
}

namespace {

// schedule_cycles for `blocks` blocks of equal work w (a non-causal launch), without the events: the
// launch gives each SM min(k, ⌈blocks/sms⌉) blocks (breadth first), which finish together at n·w; an SM
// that frees its k slots refills all k, so from then on every SM runs whole waves of k blocks (k·w
// each) and the last SM to refill takes what is left (up to k). The times are summed wave by wave in
// the event loop's own expression (t + n·w), so the two agree to rounding: bit for bit unless the
// compiler fuses the multiply-add in one and not the other.
[[nodiscard]] double uniform_schedule_cycles(double w, std::int64_t blocks, int sms, int ctas_per_sm) {
  if (ctas_per_sm < 1) return 0;  // as the event loop: no block is ever handed out
  const std::int64_t k = ctas_per_sm, slots = static_cast<std::int64_t>(sms) * k;
  if (blocks <= slots) return static_cast<double>(std::min(k, ceil_div(blocks, sms))) * w;
  double t = 0;
  std::int64_t left = blocks;
  for (; left >= slots; left -= slots) t = t + static_cast<double>(k) * w;
  return left == 0 ? t : t + static_cast<double>(std::min(k, left)) * w;
}

}  // namespace

double schedule_cycles(const std::vector<double>& work, std::int64_t repeat, int sms, CtaOrder order,
                       int ctas_per_sm) {
  double sum = 0, longest = 0;
  for (double w : work) {
    sum += w;
    longest = std::max(longest, w);
  }
  const auto total = static_cast<double>(work.size()) * static_cast<double>(repeat);
  if (total == 0) return 0;
  if (total > 200000) return std::max(sum * static_cast<double>(repeat) / sms, longest);
  if (std::ranges::all_of(work, [&](double w) { return w == longest; }))
    return uniform_schedule_cycles(longest, static_cast<std::int64_t>(total), sms, ctas_per_sm);
  return schedule_cycles_events(work, repeat, sms, order, ctas_per_sm);
}

double schedule_cycles_events(const std::vector<double>& work, std::int64_t repeat, int sms, CtaOrder order,
                              int ctas_per_sm) {
  const auto total = static_cast<double>(work.size()) * static_cast<double>(repeat);
  if (total == 0) return 0;
  // The blocks in issue order.
  std::vector<double> issue;
  issue.reserve(static_cast<std::size_t>(total));
  if (order == CtaOrder::grid) {
    for (std::int64_t r = 0; r < repeat; ++r) issue.insert(issue.end(), work.begin(), work.end());
  } else {
    std::vector<double> sorted = work;
    std::ranges::sort(sorted, std::greater<>());
    for (double w : sorted) issue.insert(issue.end(), static_cast<std::size_t>(repeat), w);
  }
  // Each SM holds up to ctas_per_sm blocks and shares its rate among them (n resident: each runs at
  // 1/n); a block enters the SM whose slot frees first. Events: an SM's next completion. The work is
  // counted in whole ticks, 2^-30 of the longest block (a power of two, so scaling is exact): an SM's
  // next completion is n·(least work left) ticks on, when every resident block has done that least
  // work, so the schedule is exact in integers and ties between SMs go to the lower index whatever the
  // compiler does with the floating point (fused multiply-adds moved ties, and with them whole blocks,
  // between builds). Sums stay below 2^30 · 200,000 < 2^63 ticks.
  int longest_exp = 0;
  std::frexp(*std::ranges::max_element(issue), &longest_exp);  // longest < 2^longest_exp
  const double kTicksPerCycle = std::ldexp(1.0, 30 - longest_exp);
  struct Sm {
    std::int64_t t = 0;              // time of its last event, ticks
    std::vector<std::int64_t> left;  // remaining work of its resident blocks, ticks
  };
  std::vector<Sm> state(static_cast<std::size_t>(sms));
  std::size_t next = 0;
  const auto ticks = [&](double w) { return std::max<std::int64_t>(1, std::llround(w * kTicksPerCycle)); };
  using Event = std::pair<std::int64_t, int>;  // (completion time, SM)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  const auto post = [&](int i) {
    const Sm& s = state[static_cast<std::size_t>(i)];
    if (!s.left.empty()) events.emplace(s.t + static_cast<std::int64_t>(s.left.size()) * std::ranges::min(s.left), i);
  };
  // The launch hands out blocks breadth first: one per SM, then a second per SM, …
  for (int round = 0; round < ctas_per_sm; ++round)
    for (auto& s : state)
      if (next < issue.size()) s.left.push_back(ticks(issue[next++]));
  for (int i = 0; i < sms; ++i) post(i);
  std::int64_t makespan = 0;
  while (!events.empty()) {
    const auto [t, i] = events.top();
    events.pop();
    Sm& s = state[static_cast<std::size_t>(i)];
    const std::int64_t done = std::ranges::min(s.left);  // work each resident block did
    for (auto& w : s.left) w -= done;
    std::erase(s.left, 0);
    s.t = t;
    makespan = std::max(makespan, t);
    while (static_cast<int>(s.left.size()) < ctas_per_sm && next < issue.size())
      s.left.push_back(ticks(issue[next++]));
    post(i);
  }
  return static_cast<double>(makespan) / kTicksPerCycle;
}

double attention_kernel_s(const rt::AttentionLaunch& l, AttentionPass pass, const KernelFamily& family,
                          const AttentionKernelParams& p, const SmSpec& sm, double tensor_flops,
                          double hbm_Bps, double bytes) {
  using Mask = rt::AttentionLaunch::Mask;
  if (l.sq <= 0 || l.sk <= 0 || l.bq <= 0) return 0;
  const bool fwd = pass == AttentionPass::forward;
  const bool causal = l.mask == Mask::causal;
  const TileShape t = tile_shape(family.name, pass, l.d, l.dv, causal);
  const double br = t.br, bc = t.bc, d = static_cast<double>(l.d), dv = static_cast<double>(l.dv);
  const double tc = tensor_flops / (sm.sm_count * sm.clock_Hz);  // FLOP per clock per SM
  const double scores = br * bc;

  const double mma = fwd ? 2 * scores * (d + dv) / (tc * p.mma_efficiency_fwd)
                         : 2 * scores * (3 * d + 2 * dv) / (tc * p.mma_efficiency_bwd);
  const double emulated = fwd ? p.exp_emulated : 0;
  const double exp = scores * (1 - emulated) / sm.sfu_per_clk;
  // Per tile the forward also rescales its Br×dv output accumulator by the new row max (one FP32
  // multiply per element) and the backward accumulates its Br×d slice of dQ in FP32.
  const double accumulator = fwd ? br * dv : br * d;
  const double fp32 = (scores * ((fwd ? kFp32Forward : kFp32Backward) + emulated * kPolyExp) + accumulator) /
                      sm.fp32_lanes_per_clk;
  // FA2's K/V are read by each of the CTA's warps; the others' by one consumer per tile.
  const double kv_reads = family.kv_reads > 1 ? t.warps : family.kv_reads;
  const double smem_bytes =
      fwd ? kElemBytes * (family.q_reads * br * d + kv_reads * bc * (d + dv))
          : kElemBytes * (br * (2 * d + 2 * dv) + bc * (2 * d + dv) / family.bwd_pair + 5 * scores);
  const double smem = smem_bytes / sm.smem_bytes_per_clk;
  const double soft = std::max(exp, fp32);  // the SFU and the FP32 pipes issue in parallel
  const double overlap = fwd ? p.overlap_fwd : p.overlap_bwd;
  const double tile = std::max({mma, soft, smem}) + (1 - overlap) * std::min(mma, soft);

  // Tiles each CTA computes. Query block m covers rows [m·br, min(sq, (m+1)·br)), key block n keys
  // [n·bc, …); under `causal` tile (m, n) is computed iff its first key is visible to its last row.
  const std::int64_t nm = ceil_div(l.sq, t.br), nn = ceil_div(l.sk, t.bc);
  const auto last_row = [&](std::int64_t m) { return std::min(l.sq, (m + 1) * t.br) - 1; };
  const auto visible = [&](std::int64_t m, std::int64_t n) { return n * t.bc <= last_row(m) + l.offset; };
  // A CTA's own HBM traffic outside the tile loop: forward loads its Q block and stores O (and lse);
  // backward loads its K, V block and stores dK, dV. All SMs do this at once, so each gets 1/SMs of
  // the HBM bandwidth; it does not overlap the CTA's tiles (prologue and epilogue).
  const double io_bytes = fwd ? kElemBytes * br * (d + dv) + 4 * br : 2 * kElemBytes * bc * (d + dv);
  const double io = io_bytes / (hbm_Bps / sm.sm_count) * sm.clock_Hz;
  // One batch·head's CTAs in launch order (query blocks forward, key blocks backward); all heads alike.
  std::vector<double> work;
  const auto add = [&](std::int64_t tiles) {
    work.push_back(static_cast<double>(tiles) * tile + io +
                   (fwd ? p.cta_overhead_cycles_fwd : p.cta_overhead_cycles_bwd));
  };
  if (!causal) {
    std::int64_t along = fwd ? nn : nm;
    if (l.mask == Mask::fraction)
      along = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(l.fraction * along)));
    work.reserve(static_cast<std::size_t>(fwd ? nm : nn));
    for (std::int64_t b = 0; b < (fwd ? nm : nn); ++b) add(along);
  } else if (fwd) {
    for (std::int64_t m = 0; m < nm; ++m) {
      const std::int64_t last = last_row(m) + l.offset;  // the last key row m's block sees
      add(last < 0 ? 0 : std::min(nn, last / t.bc + 1));
    }
  } else {
    for (std::int64_t n = 0; n < nn; ++n) {
      // Query blocks m with visible(m, n): all m from the first that reaches key n·bc.
      std::int64_t lo = 0, hi = nm;  // first visible m by bisection (visible is monotone in m)
      while (lo < hi) {
        const std::int64_t mid = (lo + hi) / 2;
        if (visible(mid, n))
          hi = mid;
        else
          lo = mid + 1;
      }
      add(nm - lo);
    }
  }
  const double cycles = schedule_cycles(work, l.bq, sm.sm_count, family.order, t.ctas_per_sm);
  return std::max(cycles / sm.clock_Hz, bytes / hbm_Bps);
}

}  // namespace spsim::sim
