// The registered closed forms of a config's strategy, on its cluster.
#include "analysis/closed_form/closed_form.hpp"

namespace spsim::analysis {

strategies::StepConfig step_config(const Config& c) {
  strategies::StepConfig s;
  s.model = c.model;
  s.workload = c.workload;
  s.degree = c.strategy.degree;
  s.options = c.strategy.options;
  s.dp = c.parallel.dp;
  s.bucket_bytes = c.parallel.bucket_bytes();
  s.compute_slowdown = c.simulation.compute_slowdown;
  return s;
}

Modelled<CostEstimate> closed_form(const Config& config, const HardwareModel& hw) {
  const auto& info = config.strategy.info();
  if (!info.closed_form) return Modelled<CostEstimate>::none(info.no_closed_form);
  return info.closed_form(step_config(config), hw);
}

Modelled<CostEstimate> closed_form(const Config& config) {
  const auto& info = config.strategy.info();
  if (!info.closed_form) return Modelled<CostEstimate>::none(info.no_closed_form);
  const HardwareModel hw(config);
  return info.closed_form(step_config(config), hw);
}

Modelled<MemoryEstimate> memory_model(const Config& config) {
  const auto& info = config.strategy.info();
  if (!info.memory) return Modelled<MemoryEstimate>::none(info.no_memory);
  return info.memory(step_config(config));
}

}  // namespace spsim::analysis
