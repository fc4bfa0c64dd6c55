// all-gather-KV's mask-aware exchange (kv_exchange = needed; needed_kv.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

// The pieces each owner's local rows are cut into: the largest of 16, 8, 4, 2, 1 dividing them.
[[nodiscard]] int needed_kv_pieces(std::int64_t local_rows);
[[nodiscard]] std::unique_ptr<AttentionStrategy> make_needed_kv(StrategyContext ctx);

}  // namespace spsim::strategies
