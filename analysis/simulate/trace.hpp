// trace_config: a config's training step (strategies/step.hpp) on degree × dp data-less trace ranks,
// the simulator's input.
#pragma once

#include <vector>

#include "analysis/config/config.hpp"
#include "runtime/core/trace_format.hpp"

namespace spsim::analysis {

// Every input is a data-less tensor made with from_host (inputs exist before the step), so the trace
// holds the step's ops, collectives, waits, allocations and phases. Throws InputError for an unknown
// strategy (strategy.name).
[[nodiscard]] std::vector<rt::trace::RankTrace> trace_config(const Config& config);

}  // namespace spsim::analysis
