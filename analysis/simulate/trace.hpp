// Tracing: the step program (strategies/step.hpp) on data-less trace ranks, the simulator's input.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "runtime/core/trace_format.hpp"
#include "runtime/trace/trace_streams.hpp"
#include "sim/replay/replay.hpp"
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

// One rank's part of the step: what trace_step runs on every trace rank, and TraceStreams on each
// rank's thread. `step` and `info` must outlive the program.
[[nodiscard]] std::function<void(rt::Device&, rt::Comm&)> step_program(const strategies::StepConfig& step,
                                                                      const strategies::StrategyInfo& info);

// The step's records streamed into the replay: every rank's program recorded as the replay's cursor
// reaches its records, and forgotten once the replay is done with them, so memory grows with the ranks
// (their programs' state, windows of `chunk` records, the replay's timelines) and not with ranks × steps.
// Past `budget_bytes` more resident memory than when it started (checked every few hundred pulls) it
// throws a ResourceError at strategy.degree, before the host runs out; the constructor throws one at
// once when the ranks' windows alone (world × chunk records) exceed the budget.
class StreamedStep {
 public:
  explicit StreamedStep(const Config& config, double budget_bytes = std::numeric_limits<double>::infinity(),
                        std::string limit_source = "", std::size_t chunk = 256);
  ~StreamedStep();
  StreamedStep(const StreamedStep&) = delete;
  StreamedStep& operator=(const StreamedStep&) = delete;
  // One RankRecords per rank, for sim::replay.
  [[nodiscard]] std::span<sim::RankRecords* const> ranks() { return pointers_; }

 private:
  class Rank;
  void pulled();  // a rank pulled its next records: now and then, the memory check
  strategies::StepConfig step_;
  double budget_bytes_;  // before limit_source_: its initialiser reads the constructor's limit_source
  double resident_at_start_ = 0;
  std::size_t pulls_ = 0;
  std::string limit_source_;
  rt::trace::TraceStreams streams_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<sim::RankRecords*> pointers_;
};

}  // namespace spsim::analysis
