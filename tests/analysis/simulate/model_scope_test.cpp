// Scope "model" with data parallelism: the DDP bucket schedule of the weight-gradient all-reduce
// (strategies/grad_buckets.hpp), the SP × DP groups of the trace, bytes against closed forms, the
// overlap with backward, the model state in memory, and the configuration errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "analysis/config/document.hpp"
#include "analysis/simulate/simulate.hpp"
#include "analysis/simulate/trace.hpp"
#include "runtime/core/error.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/grad_buckets.hpp"

using namespace spsim;
using analysis::Json;
using rt::trace::CommKind;
using rt::trace::CommOp;

namespace {

// A small model: hidden 256, 4 heads of 64, ffn 1024, 2 layers, vocab 1000.
Json small_model() {
  return {{"hidden", 256},      {"heads", 4},  {"kv_heads", 4}, {"head_dim", 64},
          {"ffn_hidden", 1024}, {"layers", 2}, {"vocab", 1000}};
}

// Parameters of one layer of small_model(), from strategies/layer.hpp's list: LN1 and LN2 (2·2·h),
// wq, bq (qd·h + qd), wk, bk and wv, bv (kvd·h + kvd each), wo, bo (h·qd + h), w1, b1 (f·h + f),
// w2, b2 (h·f + h), with h = 256, qd = kvd = 4·64, f = 1024.
constexpr double kLayerParams = 4 * 256 + (256.0 * 256 + 256) + 2 * (256.0 * 256 + 256) +
                                (256.0 * 256 + 256) + (1024.0 * 256 + 1024) + (256.0 * 1024 + 256);

analysis::Config model_config(const std::string& strategy, int degree, int dp, double bucket_mb = 25,
                              const Json& model = small_model(), std::int64_t seq_len = 1024,
                              const std::string& all_reduce = "ring") {
  Json doc = {{"schema_version", 1},
              {"model", model},
              {"workload",
               {{"seq_len", seq_len}, {"batch", 1}, {"dtype", "bf16"}, {"causal", true}, {"scope", "model"}}},
              {"cluster", {{"preset", "dgx-a100"}, {"nodes", 1}}},
              {"strategy", {{"name", strategy}, {"degree", degree}}},
              {"parallel", {{"dp", dp}, {"bucket_mb", bucket_mb}}},
              {"collectives", {{"all_reduce", all_reduce}}}};
  return analysis::parse_config(doc, "");
}

std::vector<const CommOp*> comm_ops(const rt::trace::RankTrace& t, CommKind kind) {
  std::vector<const CommOp*> out;
  for (const auto& r : t.records)
    if (const auto* op = std::get_if<CommOp>(&r); op && op->kind == kind) out.push_back(op);
  return out;
}

const rt::trace::Group& group_of(const rt::trace::RankTrace& t, rt::trace::GroupId id) {
  return *std::find_if(t.groups.begin(), t.groups.end(), [&](const auto& g) { return g.id == id; });
}

}  // namespace

TEST_CASE("grad buckets: a bucket is posted once it holds the cap, the rest at finish, one collective each") {
  // Cap 100 bytes; gradients of 30, 50, 40 | 10, 200 | 6 bytes (bf16: 15, 25, 20, 5, 100, 3 values)
  // handed over in that order: the first bucket closes at 120 ≥ 100 bytes, the second at 210, and
  // finish() posts the last 6 bytes. Every bucket is posted before any is waited for.
  const auto traces = rt::trace::trace_ranks(2, rt::DType::bf16, [](rt::Device& dev, rt::Comm& comm) {
    strategies::GradBuckets buckets(comm, 100);
    for (std::int64_t n : {15, 25, 20, 5, 100, 3}) buckets.ready(dev.empty({n}));
    CHECK(buckets.buckets_posted() == 2);
    buckets.finish();
    CHECK(buckets.buckets_posted() == 3);
  });
  for (const auto& t : traces) {
    const auto ops = comm_ops(t, CommKind::all_reduce);
    REQUIRE(ops.size() == 3);
    CHECK(ops[0]->bytes == 120);
    CHECK(ops[1]->bytes == 210);
    CHECK(ops[2]->bytes == 6);
    std::size_t last_post = 0, first_wait = t.records.size();
    for (std::size_t i = 0; i < t.records.size(); ++i) {
      if (std::holds_alternative<CommOp>(t.records[i])) last_post = i;
      if (std::holds_alternative<rt::trace::Wait>(t.records[i])) first_wait = std::min(first_wait, i);
    }
    CHECK(last_post < first_wait);
  }
}

TEST_CASE(
    "model scope, SP x DP: the strategy runs on its SP group, weight gradients are summed over the world") {
  // Ulysses on SP groups of 4, two DP replicas: world rank r is rank r % 4 of SP group r / 4.
  const auto cfg = model_config("ulysses", 4, 2, /*bucket_mb=*/0.25);
  const auto traces = analysis::trace_config(cfg);
  REQUIRE(traces.size() == 8);
  for (std::size_t r = 0; r < traces.size(); ++r) {
    CAPTURE(r);
    const int first = static_cast<int>(r) / 4 * 4;
    const auto a2a = comm_ops(traces[r], CommKind::all_to_all);
    REQUIRE(!a2a.empty());
    for (const auto* op : a2a)
      CHECK(group_of(traces[r], op->group).members ==
            std::vector<int>{first, first + 1, first + 2, first + 3});
    // Every weight gradient once, over all 8 ranks: 2 layers × kLayerParams values × 2 bytes.
    double reduced = 0;
    const auto ar = comm_ops(traces[r], CommKind::all_reduce);
    for (const auto* op : ar) {
      CHECK(group_of(traces[r], op->group).members.size() == 8);
      reduced += static_cast<double>(op->bytes);
    }
    CHECK(reduced == 2 * kLayerParams * 2);
    // Buckets over 2 · 2 · kLayerParams = 3,159,040 bytes of gradients, cap 0.25 MiB = 262,144: every
    // bucket but the last holds at least the cap (at most ⌊3,159,040 / 262,144⌋ + 1 = 13 buckets) and
    // less than the cap plus the largest gradient, w1 or w2 at 512 KiB (at least ⌈3,159,040 / 786,432⌉
    // = 5 buckets): neither one call per tensor (32) nor one call at the end.
    CHECK(ar.size() >= 5);
    CHECK(ar.size() <= 13);
  }
}

TEST_CASE("model scope, SP x DP: all-reduce bytes per rank in closed form, and the world must fit") {
  // Ring all-reduce: each rank sends 2(W−1)/W of every bucket, W = 8 ranks, buckets summing to all
  // weight gradients (2 layers × kLayerParams × 2 bytes).
  const auto s = analysis::simulate(model_config("ulysses", 4, 2), spsim::analysis::SimulateOptions::without_trace_file());
  CHECK(s.bytes_sent_by_kind.at("all_reduce") ==
        doctest::Approx(2.0 * 7 / 8 * 2 * kLayerParams * 2).epsilon(1e-12));
  CHECK(s.gpus == 8);
  try {
    (void)analysis::simulate(model_config("ulysses", 4, 4), spsim::analysis::SimulateOptions::without_trace_file());  // 16 ranks on 8 GPUs
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.where() == "parallel.dp");
    CHECK(std::string(e.what()).find("needs 16 GPUs") != std::string::npos);
  }
}

TEST_CASE("model scope: DDP buckets overlap the reduction with backward, one bucket at the end does not") {
  // Layers of 12·h² ≈ 50M parameters (h = 2048): ~100 MB of gradients per layer, whose all-reduce
  // takes about as long as a layer's backward at s/P = 1024 rows. One bucket of everything is posted
  // after the last gradient, so the whole reduction follows backward; 25 MB buckets (DDP's default)
  // start while backward still has layers to go. The bytes are the same.
  const Json model = {{"hidden", 2048},     {"heads", 16}, {"head_dim", 128},
                      {"ffn_hidden", 8192}, {"layers", 3}, {"vocab", 1000}};
  const auto overlapped = analysis::simulate(model_config("ring", 8, 1, 25, model, 8192), spsim::analysis::SimulateOptions::without_trace_file());
  const auto at_end = analysis::simulate(model_config("ring", 8, 1, 1e6, model, 8192), spsim::analysis::SimulateOptions::without_trace_file());
  CHECK(overlapped.bytes_sent_by_kind.at("all_reduce") ==
        doctest::Approx(at_end.bytes_sent_by_kind.at("all_reduce")).epsilon(1e-12));
  CHECK(overlapped.exposed_comm_s < at_end.exposed_comm_s);
  CHECK(overlapped.step_time_s < at_end.step_time_s);
}

TEST_CASE("model scope: the traced step holds the model state, 16 bytes per parameter") {
  // strategies/model/memory.hpp: bf16 weight and gradient, fp32 master weight and Adam moments = 16 bytes
  // per parameter, embedding included. Growing the vocabulary by 1000 adds 1000·h embedding parameters
  // and nothing else to the step, so exactly 16 bytes each to the peak. An added layer brings at least
  // its 16 bytes per parameter (plus the activations it keeps; its gradients are allocated during its
  // backward, while the activations of later layers are already freed, so the sum is not exact).
  auto peak = [](std::int64_t layers, std::int64_t vocab) {
    Json model = small_model();
    model["layers"] = layers;
    model["vocab"] = vocab;
    Json doc = {{"schema_version", 1},
                {"model", model},
                {"workload", {{"seq_len", 512}, {"dtype", "bf16"}, {"scope", "model"}}},
                {"cluster", {{"preset", "dgx-a100"}, {"nodes", 1}}},
                {"strategy", {{"name", "rsa"}, {"degree", 4}, {"options", {{"grad_reduction", "ring"}}}}}};
    return static_cast<double>(
        analysis::simulate(analysis::parse_config(doc, ""), spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes);
  };
  CHECK(peak(2, 2000) - peak(2, 1000) == 16 * 1000 * 256);
  CHECK(peak(3, 1000) - peak(2, 1000) >= 16 * kLayerParams);
}

// The distributed optimizer keeps the 12 bytes of optimizer state per parameter for 1/(cp · dp) of the
// parameters: the model state of rank 0 drops from 16 to 4 + 12/(cp · dp) bytes per parameter it holds,
// and nothing else in the step changes, so the peaks differ by exactly 12 · (1 − 1/(cp · dp)) bytes per
// parameter (layers and embedding), here cp 4 × dp 2.
TEST_CASE("model scope: the distributed optimizer shards the optimizer state over cp × dp") {
  auto cfg = model_config("ulysses", 4, 2);
  const auto whole = analysis::simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
  cfg.parallel.distributed_optimizer = true;
  const auto sharded = analysis::simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
  const double params = 2 * kLayerParams + 1000.0 * 256;  // 2 layers + the embedding
  CHECK(static_cast<double>(whole.peak_memory_bytes - sharded.peak_memory_bytes) ==
        doctest::Approx(12.0 * (1 - 1.0 / 8) * params).epsilon(1e-6));
  CHECK(whole.step_time_s == sharded.step_time_s);
}

// workload.recompute: each layer keeps only its input (the step holds it) and runs forward again before
// its backward. The forward is the same ops, so the same time; the backward runs every forward once
// more; the peak drops because only one layer's activations are live in backward (4 layers here).
TEST_CASE("model scope: recomputation trades a second forward for the activations") {
  Json model = small_model();
  model["layers"] = 4;
  auto cfg = model_config("ring", 4, 1, 25, model, 4096);
  const auto full = analysis::simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
  cfg.workload.recompute = true;
  const auto again = analysis::simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
  CHECK(again.forward_s == full.forward_s);
  CHECK(again.backward_s > full.backward_s + 0.9 * full.forward_s);
  CHECK(again.peak_memory_bytes < full.peak_memory_bytes);
}

TEST_CASE("parallel.bucket_mb and parallel.dp: bad values name the path") {
  auto where = [](Json parallel) -> std::string {
    Json doc = {{"schema_version", 1},
                {"model", small_model()},
                {"workload", {{"seq_len", 1024}, {"scope", "model"}}},
                {"strategy", {{"name", "ulysses"}, {"degree", 4}}},
                {"parallel", std::move(parallel)}};
    try {
      (void)analysis::parse_config(doc, "");
    } catch (const InputError& e) {
      return e.where();
    }
    return "(no error)";
  };
  CHECK(where({{"bucket_mb", 0}}) == "parallel.bucket_mb");
  CHECK(where({{"bucket_mb", "big"}}) == "parallel.bucket_mb");
  CHECK(where({{"dp", 0}}) == "parallel.dp");
  CHECK(where({{"buckets", 4}}) == "parallel.buckets");
  CHECK(where({{"dp", 2}, {"bucket_mb", 0.5}}) == "(no error)");
  // A positive size below one byte is a bucket per gradient, not a zero-byte cap: every gradient of
  // the 2 layers (16 tensors each) is its own all-reduce.
  const auto tiny = analysis::trace_config(model_config("ulysses", 4, 1, 1e-9));
  CHECK(comm_ops(tiny[0], CommKind::all_reduce).size() == 32);
}
