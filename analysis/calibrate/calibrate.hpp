// `spsim calibrate --backend mpi`: microbenchmarks of this machine through the same Device and Comm the
// strategies use, least-squares fits of the simulator's parameters, and the resulting cluster
// description ("a CPU cluster": one device entry per rank, links and collectives as measured).
//
// Communication fits are fit_line_robust (relative weights: sizes over many decades, α from the small
// ones; outliers from other processes on a shared machine are dropped, and
// counted). A benchmark whose times do not grow with its size (noise swamped it) takes the rate of
// its largest point instead, x_max / t(x_max).
// What is measured (every rank at once, so that ranks share cores and memory as in a run; the time of
// a point is the median over windows of back-to-back calls, so that it includes the process's share
// of a shared CPU as a long run does; averaged over ranks for compute, the slowest rank's for
// communication) and fitted with fit_line (fit.hpp), x in FLOPs or bytes as rt::cost counts
// them, t in seconds:
//   gemm                         t = FLOPs / R_gemm                peak FLOP/s := R_gemm, efficiency 1
//   copy                         t = bytes / W_copy                memory bandwidth := W_copy, efficiency 1
//   elementwise (add), softmax   t = bytes / W_class               efficiency = W_class / W_copy
//   (forward and backward)
//   attention forward/backward   t = FLOPs / R_class               efficiency = R_class / R_gemm
//   (fused blocks)
//   (compute rates by fit_rate: the large operations decide them), launch overhead := the median over
//   the classes of the intercept t0 of a relative fit t = t0 + x / R.
// The simulator's compute model, max(FLOPs / (peak·eff), bytes / (bw·eff)) + launch, then reproduces
// each fitted line in the regime the class is bound by.
//   p2p (ring sendrecv, n bytes)        t = α + n / B   → link latency α/2 per hop (GPU–switch–GPU),
//                                                         link bandwidth B
//   all_reduce, reduce_scatter,          t = α_K + n·f_K(P) / B_K  → "collective_fits" (fitted.hpp)
//   all_gather, all_to_all (n bytes)
// The NCCL protocol constants do not apply to MPI on shared memory; they are set to zero in "tuning".
#pragma once

#include <array>
#include <string>
#include <vector>

#include "analysis/calibrate/fit.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"

namespace spsim::analysis {

struct CalibrateOptions {
  int reps = 5;            // timed windows per point
  double window_s = 0.02;  // shortest timed window (back-to-back calls), seconds
  bool quick = false;      // fewer, smaller points (tests)
};

struct Measurement {
  double x = 0;  // FLOPs or bytes
  double t = 0;  // seconds
};

struct Benchmark {
  std::string name;    // "gemm", "copy", "p2p", "all_reduce", ...
  std::string x_unit;  // "FLOP" or "B"
  std::vector<Measurement> points;
  LineFit fit;            // communication: fit_line_robust; compute: fit_rate (alpha = 0)
  int dropped = 0;        // outliers left out of the fit (communication)
  double overhead_s = 0;  // compute: the intercept of a relative fit_line, the per-call overhead
};

struct Calibration {
  int ranks = 1;
  rt::DType dtype = rt::DType::f32;
  std::string host;
  std::vector<Benchmark> compute;  // gemm, copy, elementwise, softmax, attention_forward, attention_backward
  Benchmark p2p;
  std::vector<Benchmark> collectives;  // all_reduce, reduce_scatter, all_gather, all_to_all
  // Derived simulator parameters.
  double peak_flops = 0;               // FLOP/s
  double memory_Bps = 0;               // bytes per second
  std::array<double, 6> efficiency{};  // by rt::OpClass
  double launch_overhead_s = 0;
  double link_latency_s = 0;  // per hop
  double link_Bps = 0;
};

// Collective over `comm` (every rank must call it); the result is the same on every rank.
[[nodiscard]] Calibration calibrate_machine(rt::Device& dev, rt::Comm& comm, const CalibrateOptions& options);

// The cluster section `--out` writes (configs/clusters format with an inline "gpu" object,
// "collective_fits" and zeroed "tuning") that `simulate`, `compare` and `run --cluster` accept, as
// JSON text ending in '\n'.
[[nodiscard]] std::string calibration_cluster_text(const Calibration& c);
// The --json document: schema_version, command, cluster (as above) and benchmarks, every benchmark's
// points and fit: {"name", "x_unit", "points": [[x, t_s], ...], "intercept_s", "rate", "residual",
// "dropped"}.
[[nodiscard]] std::string calibration_json(const Calibration& c);
// One row per benchmark: points, fitted intercept and rate, residual; then the derived parameters.
[[nodiscard]] std::string render_calibration(const Calibration& c);

}  // namespace spsim::analysis
