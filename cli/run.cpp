// `mpirun -np P spsim run CONFIG --backend mpi|nccl`: the strategy run for real on P processes, timed,
// optionally verified against the reference, and compared with the simulator's prediction.
#include "analysis/run/run.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "analysis/check/check.hpp"
#include "analysis/check/memory_estimate.hpp"
#include "analysis/report/json.hpp"
#include "analysis/run/backend.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/core/error.hpp"
#ifdef SPSIM_WITH_MPI
#include "runtime/mpi/abort.hpp"
#include "runtime/mpi/mpi_comm.hpp"
#endif

namespace spsim::cli {

namespace {

struct RunArgs {
  std::string config;
  std::string backend, device, comm;
  int iters = 5;
  int warmup = 1;
  bool verify = false;
  bool sync = false;
  bool json = false;
  double timeout = 0;  // seconds, 0 = none
  std::string cluster;
  std::string max_memory;
};

// The checks that need neither the configuration nor MPI: the options' ranges and the backend, which
// names a device this build may lack.
analysis::BackendChoice checked_arguments(const RunArgs& a) {
  if (a.iters < 1) throw InputError("--iters", "must be >= 1, got " + std::to_string(a.iters));
  if (a.warmup < 0) throw InputError("--warmup", "must be >= 0, got " + std::to_string(a.warmup));
  if (a.timeout < 0 || !std::isfinite(a.timeout))
    throw InputError("--timeout", "must be a positive number of seconds, got " + std::to_string(a.timeout));
  return analysis::resolve_backend(a.backend, a.device, a.comm);
}

#ifdef SPSIM_WITH_MPI

// Everything a rank needs, validated before any rank starts running.
struct Prepared {
  analysis::Config config;
  analysis::BackendChoice backend;
  std::unique_ptr<rt::Device> device;
  analysis::RunOptions options;
};

// The processes of the job on this node: the launcher's local size (Open MPI, MPICH/Hydra), else all.
int local_processes(int world_size) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n >= 1 && n <= world_size) return n;
    }
  return world_size;
}

Prepared prepare(const RunArgs& a, const analysis::BackendChoice& backend, int world_size) {
  Prepared p;
  p.backend = backend;
  const auto loaded = analysis::load_config(a.config);
  std::optional<sim::ClusterConfig> cluster;
  if (!a.cluster.empty()) cluster = analysis::load_cluster_argument(a.cluster);
  const rt::DType dtype = analysis::run_dtype(loaded);
  p.config = analysis::run_config(loaded, world_size, dtype, cluster);
  if (a.verify) analysis::require_no_dropout(p.config, "run --verify");
  p.options = {a.iters, a.warmup, a.verify, a.sync};
  // The host memory of this node's processes: their inputs and (on CPUs) their tensors.
  const rt::MemoryLimit limit = rt::host_memory_limit(max_memory(a.max_memory));
  analysis::require_host_memory(rt::in_stage("estimating the memory",
                                             [&] {
                                               return analysis::run_memory_estimate(
                                                   p.config, world_size, local_processes(world_size), dtype,
                                                   a.verify, p.backend.device == "cpu", limit);
                                             }),
                                limit, p.config, "run");
  p.device = analysis::make_run_device(p.backend, dtype);
  return p;
}

int run_command(const RunArgs& a) {
  // The arguments are the same on every rank, so every rank rejects bad ones alike, before MPI starts
  // (main reports it from the launcher's rank 0).
  const analysis::BackendChoice backend = checked_arguments(a);
  rt::MpiEnvironment mpi;
  auto world = mpi.world();
  Prepared p;
  if (const int code = analysis::agree_on_failure(*world, [&] { p = prepare(a, backend, world->size()); });
      code != 0)
    return code;
  std::unique_ptr<rt::Watchdog> watchdog;
  if (a.timeout > 0) watchdog = rt::start_watchdog(a.timeout);
  try {
    analysis::RunComm comm(p.backend, *p.device);
    const auto m = analysis::run_strategy(p.config, *p.device, comm.get(), p.options);
    if (world->rank() == 0) {
      const auto prediction = analysis::predict_run(p.config);
      if (a.json)
        std::cout << analysis::run_json(m, prediction);
      else
        std::cout << analysis::render_run(m, prediction);
      std::cout.flush();
    }
    const bool failed = analysis::any_rank(*world, m.verify && !m.verify->pass());
    if (watchdog) watchdog->cancel();
    return failed ? 1 : 0;
  } catch (const InputError& e) {  // out of memory while running (rt::in_stage)
    rt::abort_all(std::string("run failed: ") + e.what(), 2);
  } catch (const std::exception& e) {
    rt::abort_all(std::string("run failed: ") + e.what(), 3);
  }
}

#else

int run_command(const RunArgs& a) {
  checked_arguments(a);
  throw InputError("run",
                   "this spsim was built without MPI (SPSIM_WITH_MPI); install libopenmpi-dev and rebuild");
}

#endif

}  // namespace

Action add_run(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "run",
      "Run the strategy for real on the processes of an MPI job (mpirun -np P spsim run CONFIG --backend "
      "mpi):\n"
      "time forward, backward and each communication kind, optionally verify against the reference as\n"
      "`check` does, and print measured vs predicted. Exit 0 ok, 1 verification failed, 2 bad input.");
  auto a = std::make_shared<RunArgs>();
  sub->add_option("CONFIG", a->config, "experiment config (JSON)")->required();
  sub->add_option("--backend", a->backend, "mpi (cpu + mpi, default) or nccl (cuda + nccl)");
  sub->add_option("--device", a->device, "cpu or cuda (overrides --backend)");
  sub->add_option("--comm", a->comm,
                  "mpi or nccl (overrides --backend; cuda + mpi stages through host memory)");
  sub->add_option("--iters", a->iters, "timed iterations (default 5)");
  sub->add_option("--warmup", a->warmup, "untimed iterations first (default 1)");
  sub->add_flag("--verify", a->verify, "gather outputs and gradients and compare them with the reference");
  sub->add_flag("--sync-collectives", a->sync,
                "a barrier before every collective, timed as its own row (peer_wait): each collective's\n"
                "blocked time is then its own cost, not the wait for the slowest rank to arrive");
  sub->add_flag("--json", a->json, "machine-readable output (schema_version 1)");
  sub->add_option("--timeout", a->timeout, "abort every rank after this many seconds (default: no limit)");
  sub->add_option(
      "--cluster", a->cluster,
      "cluster to predict on: a JSON file (e.g. from spsim calibrate) or a preset (default: the config's)");
  add_max_memory_option(sub, a->max_memory);
  return [a]() -> int { return run_command(*a); };
}

}  // namespace spsim::cli
