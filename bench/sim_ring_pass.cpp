// Benchmark: 1024 ranks (128 DGX-H100 nodes) each pass a 64 MiB block P-1 times around the ring,
// as Ring Attention's K/V passes do: rank i starts pass s+1 once its pass-s block has arrived at
// rank i+1 and it has received rank i-1's pass-s block. Flow model.
// Target (issue 3): under 3 s wall time, under 2 GiB memory. Prints events/s.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "analysis/config/cluster.hpp"
#include "sim/collectives/collectives.hpp"

namespace {

using namespace spsim::sim;

struct RingPass {
  Collectives& coll;
  const std::vector<DeviceId>& gpus;
  double bytes;
  int p, passes;
  std::vector<int> started, sent, received;

  void try_start(int r) {
    const auto i = static_cast<std::size_t>(r);
    const int s = started[i];
    if (s >= passes || sent[i] < s || received[i] < s) return;
    ++started[i];
    const int next = (r + 1) % p;
    coll.send(gpus[i], gpus[static_cast<std::size_t>(next)], bytes, Protocol::simple, [this, r, next] {
      ++sent[static_cast<std::size_t>(r)];
      ++received[static_cast<std::size_t>(next)];  // one sender per receiver: passes arrive in order
      try_start(r);
      try_start(next);
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 128;
  const auto t0 = std::chrono::steady_clock::now();
  const Cluster cluster(spsim::analysis::preset_cluster("dgx-h100", nodes));
  Engine engine;
  auto network = make_network(NetworkMode::flow, engine, cluster);
  Collectives coll(*network);
  const int p = static_cast<int>(cluster.gpus().size());
  const auto n = static_cast<std::size_t>(p);
  RingPass ring{coll,  cluster.gpus(),         64.0 * 1024 * 1024,     p,
                p - 1, std::vector<int>(n, 0), std::vector<int>(n, 0), std::vector<int>(n, 0)};
  for (int r = 0; r < p; ++r) ring.try_start(r);
  engine.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("ring pass: %d ranks (%d x dgx-h100) each pass a 64 MiB block %d times, flow model\n", p, nodes,
              p - 1);
  std::printf("  simulated time   %.3f ms\n", engine.now().seconds() * 1e3);
  std::printf("  transfers        %llu\n", static_cast<unsigned long long>(network->stats().transfers));
  std::printf("  events           %llu\n", static_cast<unsigned long long>(engine.events_processed()));
  std::printf("  wall time        %.3f s (target < 3 s)\n", wall);
  std::printf("  events/s         %.3g\n", static_cast<double>(engine.events_processed()) / wall);
  std::printf("  peak RSS         %.1f MiB (target < 2048 MiB)\n", static_cast<double>(ru.ru_maxrss) / 1024);
  return 0;
}
