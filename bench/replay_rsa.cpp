// Benchmark: one transformer layer, forward + backward, of RSA (ColossalAI Ring Self-Attention) with
// P = 64 on 8 DGX-H100 nodes, flow network model, single thread: trace the 64 ranks, replay them.
// Target (issue 3): under 0.5 s for the simulation, memory under 2 GiB. Prints events/s.
//   usage: bench_replay_rsa [seq_len=65536] [grad_reduction=ring]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "analysis/config/config.hpp"
#include "analysis/config/document.hpp"
#include "analysis/simulate/trace.hpp"
#include "sim/cluster/config.hpp"
#include "sim/replay/replay.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

spsim::analysis::Config bench_config(long seq_len, const std::string& reduction) {
  using spsim::analysis::Json;
  Json doc = {{"schema_version", 1},
              {"name", "bench-replay-rsa"},
              {"model", {{"preset", "bert-large"}}},
              {"workload", {{"seq_len", seq_len}, {"batch", 1}, {"dtype", "bf16"}, {"scope", "layer"}}},
              {"cluster", {{"preset", "dgx-h100"}, {"nodes", 8}}},
              {"strategy", {{"name", "rsa"}, {"degree", 64}, {"options", {{"grad_reduction", reduction}}}}},
              {"simulation", {{"network", "flow"}}}};
  return spsim::analysis::parse_config(doc, {});
}

}  // namespace

int main(int argc, char** argv) {
  const long seq_len = argc > 1 ? std::atol(argv[1]) : 65536;
  const std::string reduction = argc > 2 ? argv[2] : "ring";
  const auto cfg = bench_config(seq_len, reduction);

  const auto t0 = std::chrono::steady_clock::now();
  const spsim::sim::Cluster cluster(*cfg.cluster);
  const spsim::sim::ComputeModel model(cluster.config().gpu, cfg.workload.dtype);
  const double t_setup = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  const auto traces = spsim::analysis::trace_config(cfg);
  const double t_trace = seconds_since(t1);
  std::size_t records = 0;
  for (const auto& t : traces) records += t.records.size();

  const auto t2 = std::chrono::steady_clock::now();
  spsim::sim::ReplayOptions options;
  const auto res = spsim::sim::replay(traces, cluster, spsim::sim::NetworkMode::flow, model, options);
  const double t_replay = seconds_since(t2);

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("RSA (%s) one bert-large layer fwd+bwd, seq %ld, P=64 on 8 x dgx-h100, flow model\n",
              reduction.c_str(), seq_len);
  std::printf("simulated step      %.3f ms\n", res.makespan.seconds() * 1e3);
  std::printf("trace records       %zu\n", records);
  std::printf("cluster setup       %.3f s\n", t_setup);
  std::printf("trace (64 ranks)    %.3f s\n", t_trace);
  std::printf("replay              %.3f s  (%llu events, %.3g events/s)\n", t_replay,
              static_cast<unsigned long long>(res.events), static_cast<double>(res.events) / t_replay);
  std::printf("total               %.3f s  (target < 0.5 s)\n", t_setup + t_trace + t_replay);
  std::printf("peak memory (RSS)   %.1f MiB (target < 2048 MiB)\n",
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
