// Simulation of one training step of a config: trace the strategy on every rank, replay the traces on
// the simulated cluster, and summarise (DESIGN.md §6). Used by `simulate`, `compare`, `report`, `run`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "analysis/report/plot.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::analysis {

struct RankSummary {
  int rank = 0;
  double compute_s = 0;       // busy time of the compute stream
  double comm_s = 0;          // busy time of the communication stream
  double exposed_comm_s = 0;  // communication time not overlapped by compute
  double idle_s = 0;          // step time minus compute minus exposed communication
  double bytes_sent = 0;      // bytes this rank put on links
  std::uint64_t peak_memory_bytes = 0;
};

struct OpSummary {  // aggregated by op name/class over the slowest rank
  std::string name;
  int count = 0;
  double time_s = 0;
  double flops = 0;
};

struct SimSummary {
  double step_time_s = 0;  // makespan of the step (all ranks)
  double forward_s = 0;    // from the phase markers (of the critical rank, see below)
  double backward_s = 0;
  // Of the rank that finishes last (the one that sets the step time):
  double compute_s = 0;
  double comm_s = 0;
  double exposed_comm_s = 0;
  double idle_s = 0;
  std::map<std::string, double> bytes_sent_by_kind;  // collective kind -> bytes sent, max over ranks
  double bytes_sent_max = 0;                         // bytes sent by the busiest rank
  std::uint64_t peak_memory_bytes = 0;               // max over ranks
  std::uint64_t gpu_memory_bytes = 0;                // capacity of one GPU
  bool oom = false;
  std::vector<RankSummary> ranks;
  std::vector<OpSummary> top_ops;
  std::uint64_t events = 0;  // simulator events processed
  // Added by the replay helper:
  int critical_rank = 0;                          // the rank whose last op ends last (ties: the busiest)
  std::string cluster;                            // preset name (or "custom")
  std::string gpu;                                // GPU spec name
  int gpus = 0;                                   // GPUs in the cluster
  double compute_slowdown = 0;                    // simulation.compute_slowdown used
  std::string attention_kernel;                   // fused-attention kernel family ("" = roofline)
  std::map<std::string, std::string> algorithms;  // collective kind -> algorithm(s)/protocol that ran
  std::uint64_t skipped_ops = 0;                  // fully masked blocks never launched (all ranks)
};

struct SimulateOptions {
  std::filesystem::path chrome_trace;  // empty: config.simulation.trace_out (if any and allowed below)
  // Write the config's simulation.trace_out when chrome_trace is empty (resolved against the config
  // file's folder). Sweeps set this to false so that every point does not overwrite one file.
  bool use_config_trace_out = true;
  // When set, receives one bar per launched compute op (start to end) and per communication op (ready
  // to end) of every rank: the timeline `spsim gantt` draws.
  std::vector<GanttBar>* bars = nullptr;
  // Host memory the simulation may use (--max-memory, or a share of it for a sweep point), else what
  // the machine has free (rt::host_memory_limit). Streamed, the replay may grow by all of it; traced
  // whole (for a Chrome trace), the traces may take half of it and the replay the rest. Past it: a
  // ResourceError.
  std::optional<rt::MemoryLimit> memory_limit;
  // When set, called as each stage starts ("tracing and replaying the step on 1024 ranks of …", or
  // "tracing …" then "replaying …" when a Chrome trace is written, then "summarising …"): `spsim
  // simulate` shows them on a terminal (or with --progress), since a 1,000-GPU what-if takes a while.
  std::function<void(const std::string& stage)> progress;
  // No Chrome trace at all (what a sweep point or a test wants).
  [[nodiscard]] static SimulateOptions without_trace_file() {
    SimulateOptions o;
    o.use_config_trace_out = false;
    return o;
  }
};

// Traces config's strategy on its ranks (strategies/step.hpp), replays the traces on the config's
// cluster (sim/replay) and summarises; each rank's records stream into the replay as it needs them
// (StreamedStep), unless a Chrome trace is written. Either way the summary is the same. Throws InputError for bad input: a sweep template
// (run compare instead), a degree larger than the cluster (strategy.degree), an unknown cluster
// preset/GPU, a collective algorithm that cannot run (collectives.<kind>), a dtype the GPU lacks.
[[nodiscard]] SimSummary simulate(const Config& config, const SimulateOptions& options = {});

[[nodiscard]] std::string render_simulation(const Config& config, const SimSummary& summary);  // tables
}  // namespace spsim::analysis
