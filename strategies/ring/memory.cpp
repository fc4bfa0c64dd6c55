// The memory moments of Ring Attention (derivation in strategies/model/memory.hpp).
#include "strategies/model/sizes.hpp"
#include "strategies/ring/ring.hpp"

namespace spsim::strategies {

// K/V blocks a Ring Attention rank holds beyond its inputs (strategies/model/memory.hpp), k = one block.
// Forward step 1..P−2: the block in use and the next one arriving.
double ring_forward_buffers(int p, double k) {
  return p >= 3 ? 4 * k : p == 2 ? 2 * k : 0;
}
// Backward step 2..P−2: K/V in use and arriving (4K), the accumulator in flight, the one arriving and
// the fresh partial (6K); P = 3 has no arriving K/V at step 2 and P = 2 no step 2 at all. P = 2 with
// backward_sends = packed sends its one accumulator after the loop, once the K/V block in use is
// released: 4K.
double ring_backward_buffers(int p, double k, bool packed) {
  return p >= 4 ? 10 * k : p == 3 ? 8 * k : p == 2 ? (packed ? 4 : 6) * k : 0;
}

std::vector<Moment> ring_moments(const StepConfig& c, bool backward) {
  const AttentionSizes z(c);
  const int p = c.degree;
  const MemoryTerm in = z.inputs(backward), o{"o, lse", z.q + z.lse};
  std::vector<Moment> m = {
      {"forward ring", {in, o, {"k/v blocks in use and arriving", ring_forward_buffers(p, z.k)}}}};
  if (p >= 2) m.back().terms.push_back({"block o, lse", z.q + z.lse});
  if (!backward) return m;
  m.push_back({"backward ring",
               {in,
                o,
                {"dq, dk, dv", z.q + 2 * z.k},
                {"k/v blocks and dk/dv accumulators", ring_backward_buffers(p, z.k, ring_backward_packed(c.options))}}});
  return m;
}

Modelled<MemoryEstimate> ring_memory(const StepConfig& c) {
  if (auto why = memory_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  return from_moments(ring_moments(c, c.workload.passes == models::Passes::fwd_bwd));
}

}  // namespace spsim::strategies
