// `spsim calibrate`: fit the simulator to this machine (mpirun -np P spsim calibrate --backend mpi) or to
// nccl-tests measurements of a cluster (spsim calibrate --nccl-tests FILE...), and write a cluster JSON.
#include "analysis/calibrate/calibrate.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "analysis/calibrate/nccl_tests.hpp"
#include "analysis/report/table.hpp"
#include "analysis/run/backend.hpp"
#include "cli/commands.hpp"
#include "runtime/core/error.hpp"
#ifdef SPSIM_WITH_MPI
#include "runtime/mpi/abort.hpp"
#include "runtime/mpi/mpi_comm.hpp"
#endif

namespace spsim::cli {

namespace {

struct CalibrateArgs {
  std::string out;
  std::vector<std::string> nccl_tests;
  std::string cluster;
  std::string backend, device, comm;
  std::string dtype = "float32";
  int reps = 5;
  double window = 0.02;
  bool quick = false;
  bool json = false;
};

// Checked before any work: the output file must be writable.
void check_out(const std::string& out) {
  if (out.empty()) throw InputError("--out", "required: the cluster JSON file to write");
  std::ofstream probe(out, std::ios::app);
  if (!probe) throw InputError("--out", "cannot write '" + out + "'");
}

void write_out(const std::string& out, const std::string& text) {
  std::ofstream f(out);
  f << text;
  if (!f) throw InputError("--out", "cannot write '" + out + "'");
}

int from_nccl_tests(const CalibrateArgs& a) {
  check_out(a.out);
  std::vector<analysis::NcclTestsFit> fits;
  for (const auto& file : a.nccl_tests)
    fits.push_back(analysis::fit_nccl_tests(analysis::load_nccl_tests(file)));
  write_out(a.out, analysis::nccl_tests_cluster_text(fits, a.cluster));
  if (a.json) {
    std::cout << analysis::nccl_tests_json(fits, a.cluster);
    return 0;
  }
  analysis::Table t({{"collective", analysis::Align::left},
                     {"ranks", analysis::Align::right},
                     {"rows", analysis::Align::right},
                     {"latency α", analysis::Align::right},
                     {"busbw", analysis::Align::right},
                     {"residual (rms rel.)", analysis::Align::right},
                     {"file", analysis::Align::left}});
  for (const auto& f : fits)
    t.add_row({std::string(rt::comm_kind_name(f.kind)), std::to_string(f.ranks),
               std::to_string(f.line.points), analysis::format_seconds(f.latency_s),
               analysis::format_fixed(f.busbw_Bps / 1e9, 2) + " GB/s",
               analysis::format_fixed(f.line.residual, 3), f.source});
  std::cout << "spsim calibrate: time = α + size · f(P) / busbw fitted to nccl-tests out-of-place times\n\n"
            << t.to_text() << "\nwrote " << a.out
            << (a.cluster.empty()
                    ? " (collective_fits only: merge it into a cluster section, or pass --cluster PRESET)\n"
                    : " (cluster " + a.cluster + " with these fits; use it with run --cluster)\n");
  return 0;
}

#ifdef SPSIM_WITH_MPI
int on_machine(const CalibrateArgs& a) {
  rt::MpiEnvironment mpi;
  auto world = mpi.world();
  analysis::BackendChoice backend;
  std::unique_ptr<rt::Device> device;
  const int code = analysis::agree_on_failure(*world, [&] {
    if (world->rank() == 0) check_out(a.out);
    if (a.reps < 1) throw InputError("--reps", "must be >= 1, got " + std::to_string(a.reps));
    if (!(a.window >= 0) || a.window > 10)
      throw InputError("--window", "must be in [0, 10] seconds, got " + std::to_string(a.window));
    const auto dtype = rt::parse_dtype(a.dtype);
    if (!dtype || (*dtype != rt::DType::f32 && *dtype != rt::DType::f64))
      throw InputError("--dtype", "unknown dtype '" + a.dtype + "'; valid choices: float32, float64");
    backend = analysis::resolve_backend(a.backend, a.device, a.comm);
    device = analysis::make_run_device(backend, *dtype);
  });
  if (code != 0) return code;
  try {
    analysis::RunComm comm(backend, *device);
    const auto c = analysis::calibrate_machine(*device, comm.get(), {a.reps, a.window, a.quick});
    if (world->rank() == 0) {
      write_out(a.out, analysis::calibration_cluster_text(c));
      if (a.json)
        std::cout << analysis::calibration_json(c);
      else
        std::cout << analysis::render_calibration(c) << "wrote " << a.out << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    rt::abort_all(std::string("calibrate failed: ") + e.what(), 3);
  }
}
#else
int on_machine(const CalibrateArgs&) {
  throw InputError("calibrate",
                   "measuring this machine needs MPI, and this spsim was built without it "
                   "(SPSIM_WITH_MPI); --nccl-tests FILE... works without MPI");
}
#endif

}  // namespace

Action add_calibrate(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "calibrate",
      "Fit the simulator's parameters and write a cluster JSON (for simulate, compare, run --cluster):\n"
      "  mpirun -np P spsim calibrate --backend mpi --out FILE.json    microbenchmarks of this machine\n"
      "  spsim calibrate --nccl-tests FILE... [--cluster PRESET] --out FILE.json   per-collective α-β");
  auto a = std::make_shared<CalibrateArgs>();
  sub->add_option("--out", a->out, "cluster JSON file to write")->required();
  sub->add_option("--nccl-tests", a->nccl_tests,
                  "nccl-tests output files (all_reduce_perf, ... sendrecv_perf)");
  sub->add_option("--cluster", a->cluster, "with --nccl-tests: the preset the fits override");
  sub->add_option("--backend", a->backend, "mpi (cpu + mpi, default) or nccl (cuda + nccl)");
  sub->add_option("--device", a->device, "cpu or cuda (overrides --backend)");
  sub->add_option("--comm", a->comm, "mpi or nccl (overrides --backend)");
  sub->add_option("--dtype", a->dtype, "float32 (default) or float64");
  sub->add_option("--reps", a->reps, "timed repetitions per point (default 5)");
  sub->add_option(
      "--window", a->window,
      "shortest timed window of back-to-back calls, seconds (default 0.02; longer windows average "
      "over a shared machine's scheduling)");
  sub->add_flag("--quick", a->quick, "fewer and smaller points (a smoke test, not a calibration)");
  sub->add_flag("--json", a->json, "machine-readable output (schema_version 1)");
  return [a]() -> int { return a->nccl_tests.empty() ? on_machine(*a) : from_nccl_tests(*a); };
}

}  // namespace spsim::cli
