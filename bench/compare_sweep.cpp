// Benchmark: `spsim compare` of a 512-point sweep on the 8-GPU presets (4 clusters × 4 RSA
// grad_reduction variants × 32 sequence lengths, bert-large attention, P = 8), with 1 and 2 jobs.
//
// Run: build/bench_compare_sweep [jobs...]   (target: < 60 s with --jobs 2 on 2 cores; printed, not asserted)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "analysis/compare/compare.hpp"
#include "analysis/config/document.hpp"

using namespace spsim::analysis;
using Clock = std::chrono::steady_clock;

namespace {

Config sweep_config() {
  Json seqs = Json::array();
  for (int k = 1; k <= 32; ++k) seqs.push_back(2048 * k);
  Json doc = {{"schema_version", 1},
              {"name", "bench-compare-sweep"},
              {"model", {{"preset", "bert-large"}}},
              {"workload", {{"seq_len", 2048}}},
              {"cluster", {{"preset", "dgx-a100"}}},
              {"strategy", {{"name", "rsa"}, {"degree", 8}}},
              {"sweep",
               {{"cluster.preset", {"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200"}},
                {"strategy.options.grad_reduction",
                 {"allreduce_slice_div", "allreduce_slice", "reduce_scatter", "ring"}},
                {"workload.seq_len", seqs}}}};
  return parse_config(doc, "");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> jobs;
  for (int i = 1; i < argc; ++i) jobs.push_back(std::atoi(argv[i]));
  if (jobs.empty()) jobs = {1, 2};
  const Config config = sweep_config();
  for (int j : jobs) {
    CompareOptions o;
    o.jobs = j;
    o.simulate = [](const Config& c) { return simulate(c, spsim::analysis::SimulateOptions::without_trace_file()); };
    const auto t0 = Clock::now();
    const auto result = run_compare(config, o);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::size_t ok = 0, flagged = 0;
    for (const auto& r : result.rows) ok += r.ok() ? 1 : 0, flagged += r.closed_form_flagged() ? 1 : 0;
    std::printf(
        "compare sweep: %zu points (%zu simulated, %zu closed forms off by > 2%%), --jobs %d: %.2f s (%.1f "
        "ms/point)\n",
        result.rows.size(), ok, flagged, j, s, 1e3 * s / static_cast<double>(result.rows.size()));
  }
  return 0;
}
