// USP's models (the SPMD code is usp.cpp): its closed form and memory model.
#pragma once

#include "strategies/model/scope.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

[[nodiscard]] Modelled<CostEstimate> usp_closed_form(const StepConfig& config, const Hardware& hw);
[[nodiscard]] Modelled<MemoryEstimate> usp_memory(const StepConfig& c);

}  // namespace spsim::strategies
