// The memory moments of USP: Ulysses' over groups of u ranks with Ring Attention over the P/u groups
// inside (derivation in strategies/model/memory.hpp).
#include "strategies/compose.hpp"
#include "strategies/ulysses/ulysses.hpp"
#include "strategies/usp/usp.hpp"

namespace spsim::strategies {

Modelled<MemoryEstimate> usp_memory(const StepConfig& c) {
  if (auto why = memory_scope(c)) return Modelled<MemoryEstimate>::none(*why);
  const int u = usp_ulysses_degree(c.degree, c.options);
  return from_moments(
      ulysses_level_moments(c, u, c.degree / u, c.workload.passes == models::Passes::fwd_bwd));
}

}  // namespace spsim::strategies
