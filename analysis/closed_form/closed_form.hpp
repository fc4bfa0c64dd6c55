// The closed forms of a config: its strategy family's registered step-time and memory models
// (strategies/<family>/closed_form.cpp, memory.cpp) evaluated on the config's cluster (HardwareModel).
// `spsim compare` sets them next to the simulation; on an uncontended cluster the step times agree to
// rounding (tests/analysis/closed_form/).
#pragma once

#include "analysis/closed_form/hardware_model.hpp"
#include "analysis/config/config.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

using strategies::CostEstimate;
using strategies::MemoryEstimate;
using strategies::MemoryTerm;
using strategies::Modelled;

// The config as the strategy's models and the step program read it.
[[nodiscard]] strategies::StepConfig step_config(const Config& config);

// The strategy's closed-form step time, or why there is none (the family has no model, or the config is
// outside it: a scope other than attention, dp > 1). Throws InputError for a missing or too small cluster.
[[nodiscard]] Modelled<CostEstimate> closed_form(const Config& config);
[[nodiscard]] Modelled<CostEstimate> closed_form(const Config& config, const strategies::Hardware& hw);

// The strategy's per-rank peak memory, or why there is none. Throws nothing for a valid config.
[[nodiscard]] Modelled<MemoryEstimate> memory_model(const Config& config);

}  // namespace spsim::analysis
