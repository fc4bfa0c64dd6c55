// What the registered closed forms and memory models cover, and the reason shown when they do not.
#pragma once

#include <optional>
#include <string>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

// The closed forms model the attention core of one SP group: nullopt for such a config, else why not.
[[nodiscard]] inline std::optional<std::string> closed_form_scope(const StepConfig& c) {
  if (c.workload.scope == models::Scope::attention && c.dp == 1) return std::nullopt;
  return "closed form: attention scope and dp = 1 only";
}

// The memory models of every family but RSA cover the attention scope.
[[nodiscard]] inline std::optional<std::string> memory_scope(const StepConfig& c) {
  if (c.workload.scope == models::Scope::attention) return std::nullopt;
  return "memory model: attention scope only";
}

}  // namespace spsim::strategies
