// Tracing a config: the step program on trace ranks, with data-less inputs.
#include "analysis/simulate/trace.hpp"

#include <deque>
#include <thread>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/report/table.hpp"
#include "runtime/core/error.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "runtime/trace/trace_streams.hpp"
#include "strategies/step.hpp"

namespace spsim::analysis {

std::function<void(rt::Device&, rt::Comm&)> step_program(const strategies::StepConfig& step,
                                                         const strategies::StrategyInfo& info) {
  return [&step, &info](rt::Device& dev, rt::Comm& comm) {
    const strategies::StepData data{
        [&](strategies::StepInput, const rt::Shape& shape, const auto&) { return dev.from_host({}, shape); },
        [&](int, const strategies::ParamShard& shard) { return dev.from_host({}, shard.local()); },
        [&](std::int64_t elements) { return dev.from_host({}, {elements}); }};
    strategies::Step s(step, info, dev, comm, data);
    s.forward();
    if (step.workload.passes == models::Passes::fwd_bwd) s.backward();
  };
}

std::vector<rt::trace::RankTrace> trace_step(const strategies::StepConfig& step,
                                             const strategies::StrategyInfo& info, int world, rt::DType dtype,
                                             double budget_bytes) {
  try {
    return rt::trace::trace_ranks(world, dtype, step_program(step, info), budget_bytes);
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

// A rank's window of records: the batches pulled from its stream and not yet released, in record
// order. A batch is one pull's records and stays where it is until every record in it is released, so
// a record never moves while the replay may read it; an emptied batch's buffer is reused.
class StreamedStep::Rank final : public sim::RankRecords {
 public:
  Rank(StreamedStep& owner, int rank) : owner_(owner), streams_(owner.streams_), rank_(rank) {}
  [[nodiscard]] const rt::trace::Record* at(std::size_t i) override {
    const auto run = run_from(i);
    return run.empty() ? nullptr : run.data();
  }
  // A batch's records from i on: they stay where they are until the whole batch is released.
  [[nodiscard]] std::span<const rt::trace::Record> run_from(std::size_t i) override {
    while (i >= end_) {
      if (finished_) return {};
      std::vector<rt::trace::Record> records;
      if (!spare_.empty()) {
        records = std::move(spare_.back());
        spare_.pop_back();
      }
      if (!streams_.pull(rank_, records)) {
        finished_ = true;
        return {};
      }
      batches_.push_back({end_, std::move(records)});
      end_ += batches_.back().records.size();
      owner_.pulled();
    }
    for (auto it = batches_.rbegin(); it != batches_.rend(); ++it)  // the cursor reads the newest
      if (i >= it->first) return std::span<const rt::trace::Record>(it->records).subspan(i - it->first);
    return {};  // released
  }
  void release_before(std::size_t i) override {
    while (!batches_.empty() && batches_.front().first + batches_.front().records.size() <= i) {
      if (spare_.size() < 2) {
        spare_.push_back(std::move(batches_.front().records));
        spare_.back().clear();
      }
      batches_.pop_front();
    }
  }
  [[nodiscard]] std::span<const rt::trace::Group> groups() override { return streams_.groups(rank_); }
  [[nodiscard]] std::optional<std::uint64_t> folded_peak_bytes() override {
    return finished_ ? std::optional(streams_.peak_bytes(rank_)) : std::nullopt;
  }

 private:
  struct Batch {
    std::size_t first = 0;  // index of records[0]
    std::vector<rt::trace::Record> records;
  };
  StreamedStep& owner_;
  rt::trace::TraceStreams& streams_;
  int rank_;
  std::deque<Batch> batches_;
  std::vector<std::vector<rt::trace::Record>> spare_;
  std::size_t end_ = 0;  // records pulled so far
  bool finished_ = false;
};

namespace {
// Whether a producer thread records the ranks' next chunks beside the replay (TraceStreams' `ahead`):
// for a world large enough that recording is a good part of the time (a tenth to a third of a large
// ring's), on a machine with a second core for it. The records are the same either way.
bool record_ahead(std::int64_t world) {
  constexpr std::int64_t kLeastRanks = 64;
  return world >= kLeastRanks && std::thread::hardware_concurrency() > 1;
}

// Before anything is recorded: every rank holds at least one window of `chunk` records while the replay
// reads it, so a world whose windows alone exceed the budget is refused up front. Returns the budget.
double checked_budget(const Config& config, double budget_bytes, const std::string& limit_source,
                      std::size_t chunk) {
  const double windows = static_cast<double>(config.world()) * static_cast<double>(chunk) *
                         static_cast<double>(sizeof(rt::trace::Record));
  if (windows > budget_bytes)
    throw ResourceError("strategy.degree",
                        "simulating " + std::to_string(config.world()) + " ranks holds at least " +
                            format_bytes(windows) + " (a window of " + std::to_string(chunk) +
                            " records per rank), more than the " + format_bytes(budget_bytes) +
                            " available (" + limit_source +
                            "; --max-memory sets the limit); simulate fewer ranks "
                            "(parallel.tp × strategy.degree × parallel.dp) or raise --max-memory");
  return budget_bytes;
}
}  // namespace

StreamedStep::StreamedStep(const Config& config, double budget_bytes, std::string limit_source,
                           std::size_t chunk)
    : step_(step_config(config)),
      budget_bytes_(checked_budget(config, budget_bytes, limit_source, chunk)),
      resident_at_start_(rt::resident_bytes()),
      limit_source_(std::move(limit_source)),
      streams_(static_cast<int>(config.world()), config.workload.dtype,
               step_program(step_, config.strategy.info()), chunk, record_ahead(config.world())) {
  // The replay needs each rank's peak, not its memory curve (only a Chrome trace draws that, from whole
  // traces): Alloc and Free, about half of a ring step's records, are summed where they are made.
  streams_.fold_memory();
  for (int r = 0; r < streams_.size(); ++r) {
    ranks_.push_back(std::make_unique<Rank>(*this, r));
    pointers_.push_back(ranks_.back().get());
  }
}

void StreamedStep::pulled() {
  if (++pulls_ % 256 != 0) return;
  const double held = rt::resident_bytes() - resident_at_start_;
  if (held > budget_bytes_)
    throw ResourceError("strategy.degree",
                        "simulating " + std::to_string(streams_.size()) + " ranks already holds " +
                            format_bytes(held) + " more than when it started, past the " +
                            format_bytes(budget_bytes_) + " available (" + limit_source_ +
                            "; --max-memory sets the limit): the replay keeps every rank's program and the "
                            "time of every op; simulate fewer ranks (parallel.tp × strategy.degree × "
                            "parallel.dp) or fewer model.layers, or raise --max-memory");
}

StreamedStep::~StreamedStep() = default;

}  // namespace spsim::analysis
