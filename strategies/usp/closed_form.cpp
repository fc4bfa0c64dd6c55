// Closed-form step time of USP (strategies/usp/usp.cpp): the Ulysses all-to-alls around Ring Attention.
//
// Rank R = i·u + j sits in Ulysses group i (SP ranks i·u … i·u+u−1) and, at position i, in ring group
// j (j, u+j, 2u+j, …). Its step is the Ulysses model's with the local attention replaced by the ring
// model at position i on H/u heads over r = P/u groups (strategies/ulysses/closed_form.cpp,
// strategies/ring/closed_form.cpp):
//   forward   [replicate K, V] + A2A_u(q, k, v) + ring_forward(i) + A2A_u(o)
//   backward  A2A_u(dO) + ring_backward(i) + A2A_u(dq, dk, dv) [+ sum of K/V replicas]
// where A2A_u is an all-to-all over the Ulysses group's GPUs and the ring passes run over the ring
// group's GPUs (which cross nodes when u is a node: HardwareModel's group variants).
// Why one rank's sum is the step: the u members of Ulysses group i all hold ring position i (rows
// R_i, the same owners' columns at every step), so their timelines are identical and each all-to-all
// starts with no member waiting. Along a ring group the positions differ (causal imbalance) exactly as
// in Ring Attention; the all-to-alls add the same time to every position, so the ring model's argument
// (no rank waits for a slower neighbour's pass) holds unchanged, and the slowest position i sets the
// step. u = P is Ulysses (r = 1: no passes, one block), u = 1 is Ring Attention (the all-to-alls are
// over groups of one and cost nothing; qkv_fusion fused still packs and unpacks q, k, v). A rank sends
// (u−1)/u of q, k, v, o, dO, dq, dk, dv (k, v, dk, dv × rep) plus 2(r−1)·|K_r| forward and backward
// 2(r−1)·|K_r| + [r > 1]·2r·a·|K_r| (separate, fp32 accumulators: a = 2 for bf16) or 4(r−1)·|K_r|
// (packed), |K_r| = B·(Hkv·rep/u)·(s/r)·d·bytes.
#include <numeric>

#include "strategies/compose.hpp"
#include "strategies/ring/ring.hpp"
#include "strategies/ulysses/ulysses.hpp"
#include "strategies/usp/usp.hpp"

namespace spsim::strategies {

Modelled<CostEstimate> usp_closed_form(const StepConfig& config, const Hardware& hw) {
  if (auto why = closed_form_scope(config)) return Modelled<CostEstimate>::none(*why);
  const bool backward = config.workload.passes == models::Passes::fwd_bwd;
  const int p = config.degree;
  const int u = usp_ulysses_degree(p, config.options);
  // Ulysses group 0: on the uniform presets every group has the same links.
  std::vector<int> group0(static_cast<std::size_t>(u));
  std::iota(group0.begin(), group0.end(), 0);
  const UlyssesExchange ulysses(config, hw, group0);
  const RingLevel ring(config, hw, u, ulysses.kv_replication());
  CostEstimate worst;
  for (int i = 0; i < ring.size(); ++i) {
    Timeline t;
    t.sigma = config.compute_slowdown;
    ulysses.qkv_to_heads(t);
    ring.forward(t, i);
    ulysses.o_to_sequence(t);
    t.end_forward();
    if (backward) {
      ulysses.do_to_heads(t);
      ring.backward(t, i);
      ulysses.grads_to_sequence(t);
    }
    const CostEstimate e = t.estimate();
    if (i == 0 || e.step_s > worst.step_s) worst = e;
  }
  return worst;
}

}  // namespace spsim::strategies
