// What the registered closed forms and memory models cover, and the reason shown when they do not.
#pragma once

#include <optional>
#include <string>

#include "strategies/layer_strategy.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// The closed forms model the attention core of one SP group: nullopt for such a config, else why not.
[[nodiscard]] inline std::optional<std::string> closed_form_scope(const StepConfig& c) {
  if (c.workload.scope == models::Scope::attention && c.dp == 1) return std::nullopt;
  return "closed form: attention scope and dp = 1 only";
}

// RSA's memory model covers the layer and model scopes of the replicated layer only (whole weights,
// no tensor parallelism, the optimizer state not sharded): nullopt for such a config, else why not.
[[nodiscard]] inline std::optional<std::string> replicated_layer_scope(const StepConfig& c) {
  const bool replicated = c.tp == 1 && (c.layer == nullptr || c.layer->name == "replicated");
  if (replicated && !c.distributed_optimizer) return std::nullopt;
  return "memory model: the replicated layer without the distributed optimizer only";
}

// The memory models of every family but RSA cover the attention scope.
[[nodiscard]] inline std::optional<std::string> memory_scope(const StepConfig& c) {
  if (c.workload.scope == models::Scope::attention) return std::nullopt;
  return "memory model: attention scope only";
}

}  // namespace spsim::strategies
