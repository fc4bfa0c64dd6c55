// Closed-form step time of all-gather-KV context parallelism (strategies/allgather_kv/allgather_kv.cpp).
//
// Sequential on every rank (each collective is waited for before the attention that needs it):
//   forward   AG(K) + AG(V) + attention_forward(local queries × all s keys)
//   backward  fills of dq, dK_all, dV_all + attention_backward + RS(dK_all) + RS(dV_all)
// AG of the gathered tensor (n = B·Hkv·s·d·bytes) and RS of the full-length gradient (the same n) cost
// HardwareModel::collective_s; as rings each sends (P−1)/P·n per rank. Their chunks (dim 1) are
// strided when B·Hkv > 1: the AG then unpacks and the RS packs a copy of n (rt::chunks_strided). The zigzag
// layout gives every rank the same causal work (and balanced or document_zigzag the same under documents);
// the model takes the slowest rank's attention, since the collectives of the backward wait for it.
#include "runtime/comm.hpp"
#include "strategies/allgather_kv/allgather_kv.hpp"
#include "strategies/layouts.hpp"

namespace spsim::strategies {

Modelled<CostEstimate> allgather_kv_closed_form(const StepConfig& c, const Hardware& hw) {
  if (auto why = closed_form_scope(c)) return Modelled<CostEstimate>::none(*why);
  if (c.options.count("kv_exchange") && c.options.at("kv_exchange") == "needed")
    return Modelled<CostEstimate>::none("kv_exchange needed: what it sends depends on the mask; simulated only");
  const bool backward = c.workload.passes == models::Passes::fwd_bwd;
  const rt::DType dt = c.workload.dtype;
  const int p = c.degree;
  const std::int64_t s = c.workload.seq_len, n = s / p, d = c.model.head_dim;
  const rt::Shape q{c.workload.batch * c.model.heads, n, d},
      kv_all{c.workload.batch * c.model.kv_heads, s, d};
  const Layout layout = parse_layout(c.options.at("layout"));
  const models::AttnProblem problem = models::attention_problem(c.model, c.workload);
  rt::Positions cols;
  for (int r = 0; r < p; ++r) cols.append(layout_runs(layout, r, p, problem));
  double fwd = 0, bwd = 0;  // the slowest rank's attention
  for (int r = 0; r < p; ++r) {
    const rt::Positions rows = layout_runs(layout, r, p, problem);
    const rt::Mask m{c.workload.causal, &rows, &cols, &c.workload.bounds};
    fwd = std::max(fwd, attention_op_s(hw, rt::cost::attention_forward(q, kv_all, kv_all, dt, m)));
    bwd = std::max(bwd, attention_op_s(hw, rt::cost::attention_backward(q, kv_all, kv_all, dt, m)));
  }
  const double bytes = static_cast<double>(rt::numel(kv_all) * rt::dtype_bytes(dt)),
               sent = (p - 1.0) / p * bytes;
  const double staging = rt::chunks_strided(kv_all, 1, p) ? hw.op_time_s(rt::cost::copy(kv_all, dt)) : 0;
  Timeline t;
  t.sigma = c.compute_slowdown;
  t.comm_only(2 * (hw.collective_s(rt::CommKind::all_gather, bytes) + staging), 2 * sent);
  t.compute_only(fwd);
  t.end_forward();
  if (!backward) return t.estimate();
  t.compute_only(hw.op_time_s(rt::cost::fill(q, dt)) + 2 * hw.op_time_s(rt::cost::fill(kv_all, dt)));
  t.compute_only(bwd);
  t.comm_only(2 * (hw.collective_s(rt::CommKind::reduce_scatter, bytes) + staging), 2 * sent);
  return t.estimate();
}

}  // namespace spsim::strategies
