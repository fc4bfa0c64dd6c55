// Tracing a config: the step program on trace ranks, with data-less inputs.
#include "analysis/simulate/trace.hpp"

#include "analysis/closed_form/closed_form.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/step.hpp"

namespace spsim::analysis {

std::vector<rt::trace::RankTrace> trace_config(const Config& config) {
  const auto& info = config.strategy.info();
  const strategies::StepConfig step = step_config(config);
  return rt::trace::trace_ranks(
      config.strategy.degree * config.parallel.dp, config.workload.dtype,
      [&](rt::Device& dev, rt::Comm& world) {
        const strategies::StepData data{
            [&](strategies::StepInput, const rt::Shape& shape, const auto&) {
              return dev.from_host({}, shape);
            },
            [&](int, const std::string&, const rt::Shape& shape) { return dev.from_host({}, shape); },
            [&](std::int64_t elements) { return dev.from_host({}, {elements}); }};
        strategies::Step s(step, info, dev, world, data);
        s.forward();
        if (config.workload.passes == models::Passes::fwd_bwd) s.backward();
      });
}

}  // namespace spsim::analysis
