// Ring Self-Attention's models (the SPMD code is rsa.cpp): its closed form and memory model.
#pragma once

#include "strategies/model/scope.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

[[nodiscard]] Modelled<CostEstimate> rsa_closed_form(const StepConfig& config, const Hardware& hw);
[[nodiscard]] Modelled<MemoryEstimate> rsa_memory(const StepConfig& c);

}  // namespace spsim::strategies
