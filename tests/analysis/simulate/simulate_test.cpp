// simulate() on the RSA experiment configs (bert-large attention, seq 16384, P = 8 on one DGX A100,
// ring collectives): the dK/dV reduction's bytes against the closed forms, memory and overlap.
#include "analysis/simulate/simulate.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/config/document.hpp"
#include "analysis/config/sweep.hpp"
#include "analysis/report/json.hpp"
#include "analysis/simulate/trace.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/replay/replay.hpp"
#include "runtime/core/error.hpp"
#include "tests/cli/run_cli.hpp"

using namespace spsim;
using spsim_test::source_path;

namespace {

analysis::Config rsa(const std::string& variant) {
  return analysis::load_config(source_path("configs/experiments/rsa-" + variant + "-dgx-a100.json"));
}

analysis::SimSummary simulated(const analysis::Config& c) {
  return analysis::simulate(c, spsim::analysis::SimulateOptions::without_trace_file());
}

}  // namespace

TEST_CASE("RSA backward: reduce-scatter sends half the bytes of all-reduce-then-slice for dK/dV") {
  const auto ar = simulated(rsa("allreduce-slice"));
  const auto rs = simulated(rsa("reduce-scatter"));
  // n = the full-length dK (or dV) buffer: B · Hkv · S · D · 2 bytes (bf16) = 1 · 16 · 16384 · 64 · 2.
  const double n = 1.0 * 16 * 16384 * 64 * 2, p = 8;
  // Ring all-reduce sends 2(P−1)/P · n per rank, ring reduce-scatter (P−1)/P · n (DESIGN.md §6);
  // the backward reduces dK and dV: two calls each.
  CHECK(ar.bytes_sent_by_kind.at("all_reduce") == doctest::Approx(2 * 2 * (p - 1) / p * n).epsilon(1e-12));
  CHECK(rs.bytes_sent_by_kind.at("reduce_scatter") == doctest::Approx(2 * (p - 1) / p * n).epsilon(1e-12));
  CHECK(rs.bytes_sent_by_kind.count("all_reduce") == 0);
  CHECK(ar.bytes_sent_by_kind.count("reduce_scatter") == 0);
  // The ring passes of K and V (forward and backward) are the same in both variants.
  CHECK(ar.bytes_sent_by_kind.at("sendrecv") == rs.bytes_sent_by_kind.at("sendrecv"));
}

// Peak memory, accounted tensor by tensor from rsa.cpp (bf16, 2 bytes per element; P = 8, H = Hkv = 16,
// D = 64, c = S/P rows per rank). Per rank the step holds its inputs q, k, v, dO and output O
// (5 chunks of H·c·D) and in backward the score-sized tensors ([H, c, S]: probs, dprobs, dscores).
//  * At S = 16384 three score tensors (probs, dprobs, dscores during softmax_backward) dwarf the
//    full-length dK/dV buffer (H·c·S = 16·2048·16384 vs Hkv·S·D = 16·16384·64), so every variant
//    peaks there: 5 chunks + dV chunk + 3 score tensors.
//  * At S = 256 (c = 32) the full-length buffer (Hkv·S·D = 262144 elements) is larger than a score
//    tensor (131072), so the dK reduction sets the peak: dprobs, dscores, the 4 inputs, O, the dV and
//    dQ chunks are live, plus
//      allreduce_slice: the full dK buffer and this rank's dK chunk (sliced copy), and the full dV
//        buffer, which the dV chunk keeps alive (a view in PyTorch; see strategies/rsa/rsa.cpp);
//      reduce_scatter: the full dK buffer, the reduce-scatter output and, while it runs, the staging
//        copy of the full buffer ([H, S, D] cut along S has strided chunks; rt::chunks_strided) — as
//        much as allreduce_slice holds;
//      ring: never the full buffer, only the accumulator, the incoming one, the [H, c, c] slice of
//        dscores and the partial chunk it produces.
TEST_CASE("RSA backward: the ring never materialises the full-length dK/dV (peak memory in closed form)") {
  const double bytes = 2, H = 16, D = 64, P = 8;
  SUBCASE("S = 16384: the score matrices set the peak of every variant") {
    const double S = 16384, c = S / P, chunk = H * c * D, score = H * c * S;
    const double expected = bytes * (6 * chunk + 3 * score);
    for (const char* v : {"reduce-scatter", "ring"}) {
      CAPTURE(v);
      CHECK(static_cast<double>(simulated(rsa(v)).peak_memory_bytes) == expected);
    }
    // allreduce_slice also still holds the full-length dV buffer behind its dV chunk.
    CHECK(static_cast<double>(simulated(rsa("allreduce-slice")).peak_memory_bytes) ==
          expected + bytes * H * S * D);
  }
  SUBCASE("S = 256: the dK reduction sets the peak; ring is below all-reduce and reduce-scatter") {
    const double S = 256, c = S / P, chunk = H * c * D, score = H * c * S, full = H * S * D;
    const double base = 4 * chunk + chunk + chunk + chunk + 2 * score;  // inputs, O, dV, dQ; dprobs, dscores
    auto small = [&](const char* v) {
      auto cfg = rsa(v);
      cfg.workload.seq_len = 256;
      return simulated(cfg);
    };
    const auto ar = small("allreduce-slice"), rs = small("reduce-scatter"), ring = small("ring");
    CHECK(static_cast<double>(ar.peak_memory_bytes) == bytes * (base + 2 * full + chunk));
    CHECK(static_cast<double>(rs.peak_memory_bytes) == bytes * (base + 2 * full + chunk));
    CHECK(static_cast<double>(ring.peak_memory_bytes) == bytes * (base + 3 * chunk + H * c * c));
    CHECK(ring.peak_memory_bytes < ar.peak_memory_bytes);
    CHECK(ring.peak_memory_bytes < rs.peak_memory_bytes);
  }
}

TEST_CASE("RSA backward: the ring's dK/dV passes hide more communication than one reduce-scatter") {
  const auto rs = simulated(rsa("reduce-scatter"));
  const auto ring = simulated(rsa("ring"));
  CHECK(ring.exposed_comm_s <= rs.exposed_comm_s);
  for (std::size_t r = 0; r < ring.ranks.size(); ++r) {
    CAPTURE(r);
    CHECK(ring.ranks[r].exposed_comm_s <= rs.ranks[r].exposed_comm_s);
  }
  // The ring variant's dK/dV passes send what reduce-scatter sends: P−1 passes of n/P per tensor.
  const double n = 1.0 * 16 * 16384 * 64 * 2, p = 8;
  CHECK(ring.bytes_sent_by_kind.at("sendrecv") ==
        doctest::Approx(rs.bytes_sent_by_kind.at("sendrecv") + 2 * (p - 1) / p * n).epsilon(1e-12));
}

TEST_CASE("summary invariants: idle = step - compute - exposed; the forward precedes the backward") {
  const auto s = simulated(rsa("reduce-scatter"));
  REQUIRE(s.ranks.size() == 8);
  CHECK(s.step_time_s > 0);
  for (const auto& r : s.ranks) {
    CHECK(r.idle_s == doctest::Approx(s.step_time_s - r.compute_s - r.exposed_comm_s));
    CHECK(r.exposed_comm_s <= r.comm_s + 1e-15);
    CHECK(r.idle_s >= -1e-12);
  }
  CHECK(s.forward_s > 0);
  CHECK(s.backward_s > s.forward_s);  // backward: 2.5× the FLOPs plus the reductions
  CHECK(s.forward_s + s.backward_s <= s.step_time_s * (1 + 1e-12));
  CHECK_FALSE(s.oom);
  CHECK(s.gpu_memory_bytes == 85899345920ull);
}

TEST_CASE("the Chrome trace is valid JSON with one process per rank and one thread per stream") {
  const auto dir = spsim_test::temp_dir("replay-chrome");
  const auto path = dir / "trace.json";
  auto options = analysis::SimulateOptions::without_trace_file();
  options.chrome_trace = path;
  (void)analysis::simulate(rsa("ring"), options);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  REQUIRE(j.contains("traceEvents"));
  std::set<int> pids;
  int compute = 0, comm = 0;
  for (const auto& e : j["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    if (e["ph"] != "X") continue;
    pids.insert(e["pid"].get<int>());
    CHECK(e["dur"].get<double>() >= 0);
    if (e["tid"] == 0) ++compute;
    if (e["tid"] == 1) ++comm;
  }
  CHECK(pids.size() == 8);
  CHECK(compute > 0);
  // P−1 ring passes each of K and V in the forward, of V and K in the backward, and P−1 dK and dV
  // accumulator passes: 6 (P−1) = 42 sendrecvs per rank.
  CHECK(comm == 8 * 6 * 7);
}

TEST_CASE("streamed records give the summary of whole traces: every number, every experiment kind") {
  // Without a Chrome trace, simulate streams each rank's records into the replay and keeps only what
  // the summary needs; with one it traces every rank whole first. The summaries must not differ.
  const auto dir = spsim_test::temp_dir("streamed-vs-whole");
  int points = 0;
  for (const char* name : {"ring-layouts-llama3-8b-64k", "documents-llama3-8b-128k-1node", "model-gpt3-1.3b-sp8-dp",
                           "strategies-llama3-8b-64k", "rsa-compare"}) {
    const auto config = analysis::load_config(source_path(std::string("configs/experiments/") + name + ".json"));
    int taken = 0;
    for (const auto& point : analysis::expand_sweep(config)) {
      if (!point.ok() || taken == 4) continue;
      const std::string where = std::string(name) + " point " + std::to_string(taken);
      CAPTURE(where);
      ++taken;
      auto options = analysis::SimulateOptions::without_trace_file();
      options.chrome_trace = dir / "trace.json";
      analysis::SimSummary streamed;
      try {
        streamed = simulated(*point.config);
      } catch (const InputError&) {  // a point the cluster cannot hold: refused alike
        CHECK_THROWS_AS((void)analysis::simulate(*point.config, options), InputError);
        continue;
      }
      const auto whole = analysis::simulate(*point.config, options);
      CHECK(analysis::simulation_json(*point.config, streamed) == analysis::simulation_json(*point.config, whole));
      ++points;
    }
  }
  CHECK(points >= 12);
}

TEST_CASE("a stream handing over a few records at a time replays as the whole traces do") {
  // Chunks of one record move every rank's window at nearly every step of its cursor, while staging
  // copies (the reduce-scatter's strided dK/dV chunks) and collectives wait on their records; chunks
  // of 3 and 64 make the cursor's runs (RankRecords::run_from) end inside ops and waits.
  for (const std::size_t chunk : {1, 3, 64}) {
    for (const char* variant : {"reduce-scatter", "ring", "allreduce-slice"}) {
      CAPTURE(chunk);
      CAPTURE(variant);
      const auto config = rsa(variant);
      const sim::Cluster cluster(*config.cluster);
      const sim::ComputeModel model(cluster.config().gpu, config.workload.dtype);
      sim::ReplayOptions options;
      options.issue_times = false;
      analysis::StreamedStep step(config, std::numeric_limits<double>::infinity(), "", chunk);
      const auto streamed = sim::replay(step.ranks(), cluster, sim::NetworkMode::flow, model, options);
      const auto traces = analysis::trace_config(config);
      const auto whole = sim::replay(traces, cluster, sim::NetworkMode::flow, model, options);
      CHECK(streamed.makespan == whole.makespan);
      CHECK(streamed.events == whole.events);
      for (std::size_t r = 0; r < whole.ranks.size(); ++r) {
        CHECK(streamed.ranks[r].busy.exposed_comm == whole.ranks[r].busy.exposed_comm);
        CHECK(streamed.ranks[r].bytes_sent == whole.ranks[r].bytes_sent);
        CHECK(streamed.ranks[r].peak_bytes == whole.ranks[r].peak_bytes);
      }
    }
  }
}

TEST_CASE("a streamed replay past its memory budget stops with a ResourceError at strategy.degree") {
  const auto config = rsa("ring");
  // Below the record windows alone (8 ranks × 1 record × 64 bytes): refused before anything runs.
  try {
    analysis::StreamedStep refused(config, 511.0, "a test's budget", 1);
    FAIL("the step should have been refused");
  } catch (const ResourceError& e) {
    CHECK(e.where() == "strategy.degree");
    CHECK(std::string(e.what()).find("holds at least 512 B") != std::string::npos);
  }
  // Resident memory is checked every 256 pulls; with a pull per record and 8 MiB touched after the
  // step began, past a budget of just the windows, the check fires at the 256th pull, inside the replay.
  analysis::StreamedStep step(config, 512.0, "a test's budget", 1);
  const std::vector<char> grown(std::size_t{8} << 20, 1);
  asm volatile("" : : "r"(grown.data()) : "memory");  // the pages are written: the compiler must keep them
  const sim::Cluster cluster(*config.cluster);
  const sim::ComputeModel model(cluster.config().gpu, config.workload.dtype);
  try {
    (void)sim::replay(step.ranks(), cluster, sim::NetworkMode::flow, model);
    FAIL("the replay should have stopped");
  } catch (const ResourceError& e) {
    CHECK(e.where() == "strategy.degree");
    CHECK(std::string(e.what()).find("a test's budget") != std::string::npos);
  }
}

TEST_CASE("bad input is an InputError naming the path") {
  auto where = [](const analysis::Config& c) -> std::string {
    try {
      (void)simulated(c);
    } catch (const InputError& e) {
      return e.where();
    }
    return "(no error)";
  };
  auto c = rsa("ring");
  c.strategy.degree = 16;  // dgx-a100 has 8 GPUs
  CHECK(where(c) == "strategy.degree");
  // An unknown cluster preset is the config's error (the cluster is parsed with the config).
  auto doc = analysis::read_json_file(source_path("configs/experiments/rsa-ring-dgx-a100.json"), "test");
  doc["cluster"] = analysis::Json{{"preset", "dgx-z100"}};
  try {
    (void)analysis::parse_config(doc, {});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.where() == "cluster.preset");
  }
  c = rsa("allreduce-slice");
  c.collectives.of(rt::CommKind::all_reduce) = "nvls";  // A100 NVSwitches cannot reduce in the switch
  CHECK(where(c) == "collectives.all_reduce");
}

// Layer and model scope: with the ring variant the attention core only uses sendrecv, so every
// all-reduce is a weight gradient summed over the group (strategies/layer.hpp). Per bert-large layer
// the parameters are wq, wk, wv, wo (4·h²) and their biases (4·h), w1, w2 (2·h·ffn), b1 (ffn), b2 (h)
// and two LayerNorms (4·h): 12,596,224 values with h = 1024, ffn = 4096. A ring all-reduce sends
// 2(P−1)/P of each buffer per rank.
TEST_CASE("layer and model scope: weight-gradient all-reduce bytes in closed form") {
  const double h = 1024, ffn = 4096, p = 8, bytes = 2;
  const double params = 4 * h * h + 4 * h + 2 * h * ffn + ffn + h + 4 * h;
  const double per_layer = 2 * (p - 1) / p * bytes * params;
  auto cfg = rsa("ring");
  cfg.workload.seq_len = 1024;
  cfg.workload.scope = models::Scope::layer;
  const auto layer = simulated(cfg);
  CHECK(layer.bytes_sent_by_kind.at("all_reduce") == doctest::Approx(per_layer).epsilon(1e-12));
  cfg.workload.scope = models::Scope::model;
  cfg.model.layers = 3;
  const auto model = simulated(cfg);
  CHECK(model.bytes_sent_by_kind.at("all_reduce") == doctest::Approx(3 * per_layer).epsilon(1e-12));
  CHECK(model.step_time_s > 2.5 * layer.step_time_s);  // three layers run one after another
}

TEST_CASE("simulation.compute_slowdown: parsed, reported, and it only ever lengthens the step") {
  auto doc = analysis::read_json_file(source_path("configs/experiments/rsa-ring-dgx-a100.json"), "test");
  doc["simulation"]["compute_slowdown"] = 0.5;
  const auto slow_cfg = analysis::parse_config(doc, {});
  CHECK(slow_cfg.simulation.compute_slowdown == 0.5);
  doc["simulation"]["compute_slowdown"] = 0;
  const auto fast_cfg = analysis::parse_config(doc, {});
  const auto slow = simulated(slow_cfg), fast = simulated(fast_cfg);
  CHECK(slow.compute_slowdown == 0.5);
  CHECK(slow.step_time_s > fast.step_time_s);
  // The ring passes overlap compute; at most every compute second is stretched by 1.5.
  CHECK(slow.compute_s <= 1.5 * fast.compute_s * (1 + 1e-12));
  doc["simulation"]["compute_slowdown"] = -0.1;
  CHECK_THROWS_AS((void)analysis::parse_config(doc, {}), InputError);
}
