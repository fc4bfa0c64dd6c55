// all-gather-KV's models (the SPMD code is allgather_kv.cpp): its closed form and memory model.
#pragma once

#include "strategies/model/scope.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

[[nodiscard]] Modelled<CostEstimate> allgather_kv_closed_form(const StepConfig& config, const Hardware& hw);
[[nodiscard]] Modelled<MemoryEstimate> allgather_kv_memory(const StepConfig& c);

}  // namespace spsim::strategies
