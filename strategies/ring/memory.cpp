// The memory moments of Ring Attention (derivation in strategies/model/memory.hpp).
#include "strategies/model/sizes.hpp"
#include "strategies/ring/ring.hpp"

namespace spsim::strategies {

// K/V blocks a Ring Attention rank holds beyond its inputs (strategies/model/memory.hpp), k = one block.
// Forward step 1..P−2: the block in use and the next one arriving.
double ring_forward_buffers(int p, double k) {
  return p >= 3 ? 4 * k : p == 2 ? 2 * k : 0;
}

std::vector<Moment> ring_backward_moments(const std::vector<MemoryTerm>& held, const RingBackwardSizes& s,
                                          bool packed) {
  const int p = s.p;
  const double q = s.q, k = s.k, a = s.acc_ratio;
  if (packed || p == 1) {  // a ring of one runs the block's backward into the gradients (ring.cpp)
    // The gradients from the start; step 2..P−2: K/V in use and arriving (4K), the accumulator in
    // flight, the one arriving and the fresh partial (6K); P = 3 has no arriving K/V at step 2, and
    // P = 2 no step 2: it sends its one accumulator after the loop, once the K/V block in use is
    // released (4K).
    const double buffers = p >= 4 ? 10 * k : p == 3 ? 8 * k : p == 2 ? 4 * k : 0;
    return {{"backward ring",
             with(held, {{s.grads, q + 2 * k}, {"k/v blocks and dk/dv accumulators", buffers}})}};
  }
  // separate, P ≥ 2: dq sums in an accumulator (aQ) from the start; the gradients are made at the end.
  const MemoryTerm dq_acc{"dq accumulator", a * q};
  std::vector<Moment> m;
  // Step 0: the next K/V block arriving, the kernel's dq, dk, dv and the dk/dv accumulator they are
  // converted into.
  m.push_back({"backward ring, step 0",
               with(held, {dq_acc,
                           {"block dq, dk, dv", q + 2 * k},
                           {"dk/dv accumulator", 2 * a * k},
                           {"k/v block arriving", 2 * k}})});
  // Step 1..P−1, at the sum: K/V in use, arriving (none at the last step) and the block's dk, dv; the
  // accumulator in flight, the one arriving and their sum.
  m.push_back({"backward ring, summing",
               with(held, {dq_acc,
                           {"k/v blocks in use and arriving, block dk, dv", (p >= 3 ? 6 : 4) * k},
                           {"dk/dv accumulators: in flight, arriving, sum", 6 * a * k}})});
  // After the loop: the last accumulator sent, the one that came home, and the gradients.
  m.push_back({"backward ring, end",
               with(held, {dq_acc, {"dk/dv accumulators", 4 * a * k}, {s.grads, q + 2 * k}})});
  return m;
}

std::vector<Moment> ring_moments(const StepConfig& c, bool backward) {
  const AttentionSizes z(c);
  const int p = c.degree;
  const MemoryTerm in = z.inputs(backward), o{"o, lse", z.q + z.lse};
  std::vector<Moment> m = {
      {"forward ring", {in, o, {"k/v blocks in use and arriving", ring_forward_buffers(p, z.k)}}}};
  if (p >= 2) m.back().terms.push_back({"block o, lse", z.q + z.lse});
  if (!backward) return m;
  const auto b = ring_backward_moments({in, o}, {p, z.q, z.k, z.acc_ratio}, ring_backward_packed(c.options));
  m.insert(m.end(), b.begin(), b.end());
  return m;
}

Modelled<MemoryEstimate> ring_memory(const StepConfig& c) {
  if (auto why = memory_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  return from_moments(ring_moments(c, c.workload.passes == models::Passes::fwd_bwd));
}

}  // namespace spsim::strategies
