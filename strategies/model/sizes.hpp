// Byte sizes of one rank's attention tensors, shared by the families' memory models.
#pragma once

#include "strategies/model/memory.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// Byte sizes of one rank's tensors, B·heads·rows·d·bytes; c = s/P local tokens.
struct AttentionSizes {
  double e, q, k, lse, p;
  double acc_ratio;  // an accumulator's element over the dtype's (rt::accumulator_dtype)
  explicit AttentionSizes(const StepConfig& c)
      : e(static_cast<double>(rt::dtype_bytes(c.workload.dtype))),
        q(e * static_cast<double>(c.workload.batch * c.model.heads * (c.workload.seq_len / c.degree) *
                                  c.model.head_dim)),
        k(q * static_cast<double>(c.model.kv_heads) / static_cast<double>(c.model.heads)),
        lse(e * static_cast<double>(c.workload.batch * c.model.heads * (c.workload.seq_len / c.degree))),
        p(c.degree),
        acc_ratio(static_cast<double>(rt::dtype_bytes(rt::accumulator_dtype(c.workload.dtype))) / e) {}
  [[nodiscard]] MemoryTerm inputs(bool backward) const {
    return backward ? MemoryTerm{"q, k, v, do inputs", 2 * q + 2 * k}
                    : MemoryTerm{"q, k, v inputs", q + 2 * k};
  }
};

}  // namespace spsim::strategies
