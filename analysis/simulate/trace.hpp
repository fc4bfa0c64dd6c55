// sim_trace: run a config's strategy on P data-less trace ranks (the simulator's input).
#pragma once

#include <vector>

#include "analysis/config/config.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::analysis {

// Traces one training step of `config` on config.strategy.degree ranks, with "forward" and
// "backward" phase markers (backward only for passes fwd+bwd). What a rank holds, per scope:
//  * attention: q, k, v and the upstream gradient dO, local shards of the global shapes
//    ([B·H, s_local, d], [B·Hkv, s_local, d]) created with from_host (inputs exist before the step);
//  * layer: one SpLayer with its weights (from_host, replicated), input x and upstream dY;
//  * model: model.layers SpLayers run one after another (forward in order, backward in reverse, every
//    layer's activations kept for its backward, as training without recomputation does); no
//    embedding or LM head.
// Throws InputError for an unknown strategy (strategy.name).
[[nodiscard]] std::vector<rt::trace::RankTrace> trace_config(const Config& config);

}  // namespace spsim::analysis
