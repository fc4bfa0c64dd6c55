// The memory moments of Ulysses over groups of u ranks (derivation in strategies/model/memory.hpp), around
// a local attention (ulysses) or Ring Attention (usp).
#include "strategies/model/sizes.hpp"
#include "strategies/ring/ring.hpp"
#include "strategies/ulysses/ulysses.hpp"

namespace spsim::strategies {

// Ulysses over groups of u ranks around an inner attention on the head-sharded q, k, v: a local block
// (ulysses, ring_r = 0) or Ring Attention over ring groups of ring_r ranks (usp), whose moments sit
// on top of what the Ulysses level holds.
std::vector<Moment> ulysses_level_moments(const StepConfig& c, int u, int ring_r, bool backward) {
  const AttentionSizes z(c);
  const double rep = c.model.kv_heads % u == 0 ? 1 : static_cast<double>(u / c.model.kv_heads);
  const double kr = z.k * rep, t = z.q + 2 * kr, ones = rep * z.e;
  const bool fused = c.options.at("qkv_fusion") == "fused";
  const MemoryTerm in = z.inputs(backward);
  // Staging buffers of the all-to-alls whose chunks are strided (rt::chunks_strided), alive from post to
  // wait: the sequence layout [B, H, c, d] when B > 1, the head layout [B, H/u, s, d] when B·H/u > 1, the
  // fused buffer [B, u, ·, d] when B > 1 (pack and unpack); none for a group of one.
  const std::int64_t b = c.workload.batch, cl = c.workload.seq_len / c.degree, d = c.model.head_dim;
  // A tensor of `heads_per_rank`·u heads: sequence layout split on dim 1, head layout gathered on dim 2.
  auto staging = [&](double bytes, std::int64_t heads_per_rank) {
    return (rt::chunks_strided({b, heads_per_rank * u, cl, d}, 1, u) ? bytes : 0) +
           (rt::chunks_strided({b, heads_per_rank, u * cl, d}, 2, u) ? bytes : 0);
  };
  const std::int64_t hq = c.model.heads / u, hk = c.model.kv_heads * static_cast<std::int64_t>(rep) / u;
  const double stage_qkv = staging(z.q, hq) + 2 * staging(kr, hk), stage_o = staging(z.q, hq),
               stage_fused = rt::chunks_strided({b, u, (hq + 2 * hk) * cl, d}, 1, u) ? 2 * t : 0;
  std::vector<Moment> m;
  std::vector<MemoryTerm> reps;  // the replicated K, V, alive while they go to the head layout
  if (rep > 1) {
    m.push_back({"forward replicate K, V", {in, {"replicated k, v", 2 * kr}, {"ones", ones}}});
    reps.push_back({"replicated k, v", 2 * kr});
  }
  if (!fused) {
    m.push_back({"forward to heads", with(with({in}, reps), {{"q, k, v head-sharded", t}})});
    if (stage_qkv > 0) m.back().terms.push_back({"all-to-all staging", stage_qkv});
  } else {
    if (stage_fused > 0)
      m.push_back(
          {"forward to heads (fused), exchange",
           with(with({in}, reps), {{"packed send, receive", 2 * t}, {"all-to-all staging", stage_fused}})});
    // Packed send and receive buffers; per tensor i a slice (freed) and its permute (kept):
    // prefix_i + 2·x_i at tensor i.
    const double x[3] = {z.q, kr, kr};
    double prefix = 0, worst = 0;
    for (double xi : x) worst = std::max(worst, prefix + 2 * xi), prefix += xi;
    m.push_back({"forward to heads (fused)",
                 with(with({in}, reps),
                      {{"packed send, receive", 2 * t}, {"unpacked so far, slice, permute", worst}})});
  }
  const std::vector<MemoryTerm> kept = {{"q, k, v head-sharded", t}, {"o head-sharded, lse", z.q + z.lse}};
  if (ring_r > 0) {
    m.push_back({"forward ring", with(with({in}, kept), {{"k/v blocks in use and arriving",
                                                          ring_forward_buffers(ring_r, kr)}})});
    if (ring_r >= 2) m.back().terms.push_back({"block o, lse", z.q + z.lse});
  }
  m.push_back({"forward attention, o to sequence", with(with({in}, kept), {{"o", z.q}})});
  if (stage_o > 0) m.back().terms.push_back({"all-to-all staging", stage_o});
  if (!backward) return m;
  const std::vector<MemoryTerm> held = with(with({in}, {{"o", z.q}}), kept);
  if (stage_o > 0)  // dO to the head layout, staged as o was
    m.push_back(
        {"backward dO to heads", with(held, {{"do head-sharded", z.q}, {"all-to-all staging", stage_o}})});
  if (ring_r > 0) {
    const auto b = ring_backward_moments(with(held, {{"do head-sharded", z.q}}),
                                         {ring_r, z.q, kr, z.acc_ratio, "dq, dk, dv head-sharded"},
                                         ring_backward_packed(c.options));
    m.insert(m.end(), b.begin(), b.end());
  } else {
    m.push_back({"backward attention", with(held, {{"do head-sharded", z.q}, {"dq, dk, dv head-sharded", t}})});
  }
  const std::vector<MemoryTerm> grads = {
      in, {"o", z.q}, {"do head-sharded", z.q}, {"dq, dk, dv head-sharded", t}};
  if (!fused) {
    m.push_back({"backward to sequence", with(grads, {{"dq, dk, dv", t}})});
    if (stage_qkv > 0) m.back().terms.push_back({"all-to-all staging", stage_qkv});
  } else {
    m.push_back({"backward to sequence (fused)",
                 with(grads, {{"permuted parts, packed send, receive", 3 * t}, {"dq, dk, dv slices", t}})});
    if (stage_fused > 0)
      m.push_back({"backward to sequence (fused), exchange",
                   with(grads, {{"permuted parts, packed send, receive", 3 * t},
                                {"all-to-all staging", stage_fused}})});
  }
  if (rep > 1)
    m.push_back({"backward sum replicas",
                 with(grads, {{"dq, dk, dv (replicated)", t}, {"dk, dv", 2 * z.k}, {"ones", ones}})});
  return m;
}

Modelled<MemoryEstimate> ulysses_memory(const StepConfig& c) {
  if (auto why = memory_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  return from_moments(ulysses_level_moments(c, c.degree, 0, c.workload.passes == models::Passes::fwd_bwd));
}

}  // namespace spsim::strategies
