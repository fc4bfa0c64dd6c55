// Tracing a config: the step program on trace ranks, with data-less inputs.
#include "analysis/simulate/trace.hpp"

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/report/table.hpp"
#include "runtime/core/error.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/step.hpp"

namespace spsim::analysis {

std::vector<rt::trace::RankTrace> trace_step(const strategies::StepConfig& step,
                                             const strategies::StrategyInfo& info, int world, rt::DType dtype,
                                             double budget_bytes) {
  auto rank = [&](rt::Device& dev, rt::Comm& comm) {
    const strategies::StepData data{
        [&](strategies::StepInput, const rt::Shape& shape, const auto&) { return dev.from_host({}, shape); },
        [&](int, const strategies::ParamShard& shard) { return dev.from_host({}, shard.local()); },
        [&](std::int64_t elements) { return dev.from_host({}, {elements}); }};
    strategies::Step s(step, info, dev, comm, data);
    s.forward();
    if (step.workload.passes == models::Passes::fwd_bwd) s.backward();
  };
  try {
    return rt::trace::trace_ranks(world, dtype, rank, budget_bytes);
  } catch (const rt::trace::TraceBudgetExceeded& e) {
    throw ResourceError(
        "strategy.degree",
        "the traces of the first " + std::to_string(e.ranks_done) + " of " + std::to_string(e.world_size) +
            " ranks already hold " + format_bytes(e.bytes) + ", more than the " + format_bytes(e.budget) +
            " the trace may take (half the memory available, or of --max-memory); traces grow with "
            "ranks × ring steps: simulate fewer ranks (parallel.tp × strategy.degree × parallel.dp) or fewer "
            "model.layers, or raise --max-memory");
  }
}

std::vector<rt::trace::RankTrace> trace_config(const Config& config, double budget_bytes) {
  return trace_step(step_config(config), config.strategy.info(), static_cast<int>(config.world()),
                    config.workload.dtype, budget_bytes);
}

}  // namespace spsim::analysis
