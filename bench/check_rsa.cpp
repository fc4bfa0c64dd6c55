// Benchmark: `spsim check` of RSA at attention scope, P=8, sequence 4096, batch×heads 16, head dim 64,
// float64 — wall time, and the check's effective GFLOP/s next to Eigen's large-GEMM GFLOP/s.
//
// Run: build/bench_check_rsa [grad_reduction]   (target: < 15 s on 2 cores, ratio ≥ 0.5)
//
// FLOPs counted: the strategy's ops as the cost model counts them (runtime/cost.hpp, summed over the
// P ranks of a trace of the same code), plus the reference: attention forward 4·S²·D per head
// (QKᵀ and PV) and backward 10·S²·D per head (it recomputes QKᵀ, then dV, dP, dQ, dK: 5 GEMMs of
// 2·S²·D each).
#include <Eigen/Dense>
#include <chrono>
#include <cstdio>
#include <string>

#include "analysis/check/check.hpp"
#include "runtime/trace/trace_ranks.hpp"

using namespace spsim;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of 3 single-threaded Eigen GEMMs of n×n×n in float64.
double eigen_gemm_gflops(int n) {
  Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n), b = Eigen::MatrixXd::Random(n, n), c(n, n);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    c.noalias() = a * b;
    best = std::max(best, 2.0 * n * n * n / seconds_since(t0) / 1e9);
  }
  std::printf("(checksum %.3f)\n", c(0, 0));
  return best;
}

double strategy_flops(const analysis::Config& cfg) {
  const auto* info = strategies::builtin().find(cfg.strategy.name);
  const auto problem = models::attention_problem(cfg.model, cfg.workload);
  const auto traces =
      rt::trace::trace_ranks(cfg.strategy.degree, rt::DType::f64, [&](rt::Device& dev, rt::Comm& comm) {
        auto pos = info->positions(comm.rank(), comm.size(), problem, cfg.strategy.options);
        const auto n = static_cast<std::int64_t>(pos.size());
        auto strategy = info->create({dev, comm, problem, cfg.strategy.options, pos});
        const std::int64_t bh = problem.batch * problem.heads, bkv = problem.batch * problem.kv_heads;
        rt::Tensor q = dev.empty({bh, n, problem.head_dim}), k = dev.empty({bkv, n, problem.head_dim});
        rt::Tensor o = strategy->forward(q, k, k);
        auto g = strategy->backward(o);
      });
  double flops = 0;
  for (const auto& t : traces)
    for (const auto& r : t.records)
      if (const auto* op = std::get_if<rt::trace::ComputeOp>(&r)) flops += op->flops;
  return flops;
}

}  // namespace

int main(int argc, char** argv) {
  analysis::Config cfg;
  cfg.name = "bench-check-rsa";
  cfg.model.heads = cfg.model.kv_heads = 16;
  cfg.model.head_dim = 64;
  cfg.model.hidden = 1024;
  cfg.workload.seq_len = 4096;
  cfg.workload.batch = 1;
  cfg.workload.scope = models::Scope::attention;
  cfg.strategy.name = "rsa";
  cfg.strategy.degree = 8;
  cfg.strategy.options = {{"grad_reduction", argc > 1 ? argv[1] : "reduce_scatter"}};
  cfg.check.dtype = rt::DType::f64;

  const double gemm = eigen_gemm_gflops(1024);
  const double s = static_cast<double>(cfg.workload.seq_len), d = 64, heads = 16;
  const double flops = strategy_flops(cfg) + 14.0 * s * s * d * heads;

  const auto t0 = Clock::now();
  const auto res = analysis::run_check(cfg);
  const double wall = seconds_since(t0);
  const double eff = flops / wall / 1e9;
  std::printf("spsim check rsa (%s), attention, P=8, S=4096, BH=16, D=64, float64: %s\n",
              cfg.strategy.options["grad_reduction"].c_str(), res.pass() ? "pass" : "FAIL");
  std::printf("wall time           %8.2f s   (target < 15 s)\n", wall);
  std::printf("check FLOPs         %8.1f GFLOP\n", flops / 1e9);
  std::printf("effective           %8.2f GFLOP/s (both cores)\n", eff);
  std::printf("Eigen 1024^3 GEMM   %8.2f GFLOP/s (one core)\n", gemm);
  std::printf("ratio               %8.2f   (target >= 0.5)\n", eff / gemm);
  return res.pass() ? 0 : 1;
}
