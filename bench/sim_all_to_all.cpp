// Benchmark: pairwise all-to-all of 1 GiB per rank over 512 GPUs (64 DGX-H100 nodes), flow model.
// Target (issue 3): under 1 s wall time, under 2 GiB memory. Prints events/s.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "analysis/config/cluster.hpp"
#include "sim/collectives/collectives.hpp"

int main(int argc, char** argv) {
  using namespace spsim::sim;
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 64;
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster cluster(spsim::analysis::preset_cluster("dgx-h100", nodes));
  Engine engine;
  auto network = make_network(NetworkMode::flow, engine, cluster);
  Collectives coll(*network);
  CollectiveResult result;
  coll.start({CommKind::all_to_all, cluster.gpus(), 1024.0 * 1024 * 1024, "pairwise", Protocol::simple, 1},
             [&](const CollectiveResult& r) { result = r; });
  engine.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto p = cluster.gpus().size();
  std::printf("pairwise all_to_all, 1 GiB per rank, %zu GPUs (%d x dgx-h100), flow model\n", p, nodes);
  std::printf("  simulated time   %.3f ms (busbw %.1f GB/s)\n", result.duration().seconds() * 1e3,
              1024.0 * 1024 * 1024 / result.duration().seconds() / 1e9 * (p - 1.0) / p);
  std::printf("  transfers        %llu\n", static_cast<unsigned long long>(network->stats().transfers));
  std::printf("  events           %llu\n", static_cast<unsigned long long>(engine.events_processed()));
  std::printf("  wall time        %.3f s (target < 1 s)\n", wall);
  std::printf("  events/s         %.3g\n", static_cast<double>(engine.events_processed()) / wall);
  std::printf("  peak RSS         %.1f MiB (target < 2048 MiB)\n", static_cast<double>(ru.ru_maxrss) / 1024);
  return 0;
}
