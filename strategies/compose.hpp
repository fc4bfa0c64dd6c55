// Building blocks that composite strategies (usp) assemble from the single-level ones.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

// Ulysses over ctx.comm (options qkv_fusion, kv_replication; problem.seq_len = the tokens of the whole
// group). With `inner`, the attention over the head-sharded, gathered sequence is inner's forward and
// backward instead of one local attention block.
[[nodiscard]] std::unique_ptr<AttentionStrategy> make_ulysses(StrategyContext ctx,
                                                              std::unique_ptr<AttentionStrategy> inner);
// Why Ulysses cannot run `p` over `degree` ranks with these options, or nullopt.
[[nodiscard]] std::optional<std::string> check_ulysses(const models::AttnProblem& p, int degree,
                                                       const Options& options);

// Ring Attention over ctx.comm (option layout); ctx.positions are the rows' global positions and
// owner j's columns are layout_runs(layout, j, P, problem).
[[nodiscard]] std::unique_ptr<AttentionStrategy> make_ring_attention(StrategyContext ctx);

// USP's Ulysses group size for `degree` ranks: option ulysses_degree, or for "0" (auto) gcd(degree, 8).
[[nodiscard]] int usp_ulysses_degree(int degree, const Options& options);

}  // namespace spsim::strategies
