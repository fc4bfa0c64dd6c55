// Tracing: the step program (strategies/step.hpp) on data-less trace ranks, the simulator's input.
#pragma once

#include <limits>
#include <vector>

#include "analysis/config/config.hpp"
#include "runtime/core/trace_format.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

// `config`'s step on degree × dp trace ranks. Every input is a data-less tensor made with from_host
// (inputs exist before the step), so the trace holds the step's ops, collectives, waits, allocations
// and phases. The traces may hold at most `budget_bytes` (InputError at strategy.degree past it, naming
// the need and the budget).
[[nodiscard]] std::vector<rt::trace::RankTrace> trace_config(
    const Config& config, double budget_bytes = std::numeric_limits<double>::infinity());

// The same for a step config of the strategy `info` on `world` ranks computing in `dtype` (the
// memory estimates of check and run trace the step they are about to run).
[[nodiscard]] std::vector<rt::trace::RankTrace> trace_step(const strategies::StepConfig& step,
                                                           const strategies::StrategyInfo& info, int world,
                                                           rt::DType dtype, double budget_bytes);

}  // namespace spsim::analysis
