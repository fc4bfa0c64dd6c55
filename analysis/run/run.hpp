// `spsim run`: a strategy executed for real on the ranks of a multi-process job (MPI on CPUs, NCCL on
// GPUs), timed per phase and per communication kind, optionally verified against the float64
// reference exactly as `spsim check` does, and set next to the simulator's prediction (DESIGN.md §9).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "analysis/check/check.hpp"
#include "analysis/config/config.hpp"
#include "analysis/simulate/simulate.hpp"
#include "runtime/timed_comm.hpp"
#include "runtime/timed_device.hpp"

namespace spsim::analysis {

struct RunOptions {
  int iters = 5;   // timed iterations (forward + backward each)
  int warmup = 1;  // untimed iterations first
  bool verify = false;
  // A barrier before every collective, reported as its own row: the collectives' blocked time is then
  // their own cost, without waiting for the slowest member (rt::TimedComm).
  bool sync_collectives = false;
};

// The config a run of `world_size` ranks executes and simulates: strategy.degree = world_size / parallel.tp
// (tp × cp = the world; checked against the layer's and the strategy's constraints), workload.dtype = the dtype it computes in (so the simulator
// counts the same bytes and FLOP rate), and `cluster` (when given) as the cluster section.
// InputError for scope 'model', a degree the strategy cannot run, or a bad cluster section.
[[nodiscard]] Config run_config(const Config& config, int world_size, rt::DType dtype,
                                const std::optional<sim::ClusterConfig>& cluster);

// The step a run executes: one TP × SP group (run_config rejects dp > 1), forward and backward.
[[nodiscard]] strategies::StepConfig run_step_config(const Config& config);

// The dtype a run computes in: float32 unless the config's "check" section names a dtype.
[[nodiscard]] rt::DType run_dtype(const Config& config);

// One rank's times in one iteration, seconds.
struct RankIteration {
  double forward_s = 0;
  double backward_s = 0;
  double comm_forward_s = 0;                    // blocked in communication during forward
  double comm_backward_s = 0;                   // ... during backward
  std::array<double, rt::kCommKinds> comm_s{};  // blocked per kind over the iteration
  std::array<double, rt::kOpClasses> op_s{};    // compute per op class (rt::OpClass) over the iteration
};

struct Spread {
  double median = 0, min = 0, max = 0;
};
// Median (the mean of the two middle values for an even count), min and max; all 0 when empty.
[[nodiscard]] Spread spread_of(std::vector<double> values);

struct RunMeasurement {
  std::string config_name;
  std::string strategy;
  strategies::Options options;
  int ranks = 1;
  int tp = 1;         // tensor-parallel size (ranks = tp × the strategy's degree)
  std::string layer;  // the layer strategy with its options, e.g. "megatron_sp (sequence_parallel=true, …)"
  rt::DType dtype = rt::DType::f32;
  models::Scope scope = models::Scope::attention;
  std::string device, comm;
  RunOptions run;
  // samples[i][r]: iteration i on rank r (complete on rank 0; other ranks hold only their own).
  std::vector<std::vector<RankIteration>> samples;
  std::array<rt::CommKindStats, rt::kCommKinds>
      per_iteration{};                // calls and bytes of one iteration on rank 0
  rt::OpStats ops_per_iteration{};    // calls per op class of one iteration on rank 0
  std::optional<CheckResult> verify;  // rank 0, with --verify
};

// Collective over `comm`: every rank runs the config's strategy on its shard of the check inputs,
// `options.warmup` + `options.iters` times, through a rt::TimedComm; times are gathered to rank 0, and
// with `verify` the last iteration's outputs and gradients are gathered and compared on rank 0.
// `config` must be the run_config of comm.size() ranks.
[[nodiscard]] RunMeasurement run_strategy(const Config& config, rt::Device& dev, rt::Comm& comm,
                                          const RunOptions& options);

// One row of the timing table: a phase's per-iteration time on the slowest rank of that iteration.
// Rows: forward, backward, step, compute, then its op classes ("  gemm", ...), communication, then its
// kinds ("  sendrecv", ...).
struct PhaseRow {
  std::string name;
  std::string key;  // "forward", "backward", "step", "compute", "communication", "op:gemm", "comm:sendrecv"
  Spread spread;
  int slowest_rank = 0;  // the rank with the largest median of this phase
  double calls = 0;      // communication rows: calls per iteration
  double bytes = 0;      // communication rows: bytes per iteration
};
[[nodiscard]] std::vector<PhaseRow> phase_rows(const RunMeasurement& m);

// The simulator's prediction for the run's config, or why there is none.
struct Prediction {
  bool available = false;
  std::string note;     // why not available
  std::string cluster;  // the cluster's name and GPU
  SimSummary summary;
};
// Simulates `config` (a run_config). Never throws for a missing or unusable cluster: that is a note.
[[nodiscard]] Prediction predict_run(const Config& config);

[[nodiscard]] std::string render_run(const RunMeasurement& m, const Prediction& p);
// (name, measured median, predicted) for every phase both sides define: forward, backward, step,
// compute, each op class, exposed communication.
struct ComparedPhase {
  std::string name;
  double measured = 0;
  double predicted = 0;
};
[[nodiscard]] std::vector<ComparedPhase> compared_phases(const std::vector<PhaseRow>& rows,
                                                         const SimSummary& s);

}  // namespace spsim::analysis
