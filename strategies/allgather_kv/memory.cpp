// The memory moments of all-gather-KV (derivation in strategies/model/memory.hpp).
#include "runtime/comm.hpp"
#include "strategies/allgather_kv/allgather_kv.hpp"
#include "strategies/model/sizes.hpp"

namespace spsim::strategies {

namespace {

std::vector<Moment> moments(const StepConfig& c, bool backward) {
  const AttentionSizes z(c);
  const double f = z.k * z.p;  // a gathered K: B·Hkv·s·d
  const MemoryTerm in = z.inputs(backward);
  const std::vector<MemoryTerm> fwd = {in, {"gathered k, v", 2 * f}, {"o, lse", z.q + z.lse}};
  // The gathered [B·Hkv, s, d] and the full-length gradients are cut along s: strided chunks when
  // B·Hkv > 1, so both all-gathers unpack and both reduce-scatters pack through a buffer of f each.
  const double stage =
      rt::chunks_strided({c.workload.batch * c.model.kv_heads, c.workload.seq_len, c.model.head_dim}, 1,
                         c.degree)
          ? 2 * f
          : 0;
  std::vector<Moment> m = {{"forward attention", fwd}};
  if (stage > 0)
    m.push_back({"forward all-gather", {in, {"gathered k, v", 2 * f}, {"all-gather staging", stage}}});
  if (!backward) return m;
  m.push_back({"backward attention", with(fwd, {{"dq", z.q}, {"full-length dk, dv", 2 * f}})});
  m.push_back({"backward reduce-scatter",
               {in, {"o", z.q}, {"dq", z.q}, {"full-length dk, dv", 2 * f}, {"dk, dv", 2 * z.k}}});
  if (stage > 0) m.back().terms.push_back({"reduce-scatter staging", stage});
  return m;
}

}  // namespace

Modelled<MemoryEstimate> allgather_kv_memory(const StepConfig& c) {
  if (auto why = memory_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  if (c.options.count("kv_exchange") && c.options.at("kv_exchange") == "needed")
    return Modelled<MemoryEstimate>::none("kv_exchange needed: what it holds depends on the mask; simulated only");
  const bool backward = c.workload.passes == models::Passes::fwd_bwd;
  MemoryEstimate e = from_moments(moments(c, backward));
  if (backward)  // the full-length dK/dV partials before their reduce-scatter
    e.full_grad_buffer_bytes = static_cast<double>(c.workload.batch * c.model.kv_heads * c.workload.seq_len *
                                                   c.model.head_dim * rt::dtype_bytes(c.workload.dtype));
  return e;
}

}  // namespace spsim::strategies
