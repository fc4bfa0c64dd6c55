// The closed forms and memory models of Ulysses, Ring Attention and all-gather-KV against the
// simulator, and one memory peak of each derived by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/config/document.hpp"
#include "analysis/simulate/simulate.hpp"

using namespace spsim::analysis;

namespace {

struct Variant {
  std::string strategy;
  Json options;
};

Config config(const Json& model, std::int64_t seq, int degree, const Variant& v, bool causal,
              const std::string& passes, const std::string& cluster = "dgx-a100", int batch = 1) {
  Json doc = {{"schema_version", 1},
              {"model", model},
              {"workload", {{"seq_len", seq}, {"passes", passes}, {"causal", causal}, {"batch", batch}}},
              {"cluster", {{"preset", cluster}, {"nodes", 1}}},
              {"strategy", {{"name", v.strategy}, {"degree", degree}, {"options", v.options}}}};
  return parse_config(doc, "");
}

const std::vector<Variant> variants = {
    {"ulysses", {{"qkv_fusion", "separate"}}}, {"ulysses", {{"qkv_fusion", "fused"}}},
    {"ring", {{"layout", "contiguous"}}},      {"ring", {{"layout", "zigzag"}}},
    {"ring", {{"layout", "striped"}}},         {"allgather_kv", Json::object()},
    {"ring", {{"layout", "zigzag"}, {"backward_sends", "packed"}}},
};

// kv_heads 4 < P = 8: Ulysses needs kv_replication (each kv head sent to P/Hkv = 2 ranks).
const Json gqa4 = {{"hidden", 4096}, {"heads", 32}, {"kv_heads", 4}};
const Variant replicate_separate{"ulysses", {{"qkv_fusion", "separate"}, {"kv_replication", "replicate"}}};
const Variant replicate_fused{"ulysses", {{"qkv_fusion", "fused"}, {"kv_replication", "replicate"}}};

}  // namespace

TEST_CASE("closed form vs simulator: Ulysses, Ring Attention, all-gather-KV within 2% on one node") {
  // The closed forms (strategies/<family>/closed_form.cpp) are derived from the strategies' code, not from
  // the replay: γ = the roofline of DESIGN.md §6 on the op shapes; α-β = all-to-all (direct: base + α +
  // (P−1)·(n/P)β on one NVSwitch), ring all-gather / reduce-scatter (P−1)(α + nβ/P), one sendrecv
  // α + nβ per ring pass; overlap = per ring step max(t_comm, t_compute + σ/(1+σ)·t_comm); causal
  // imbalance = the slowest rank's sum. One SP group on one node is uncontended.
  struct Case {
    Json model;
    std::int64_t seq;
    int degree;
    std::string cluster;
  };
  const std::vector<Case> cases = {
      {{{"preset", "bert-large"}}, 8192, 8, "dgx-a100"}, {{{"preset", "llama2-7b"}}, 16384, 8, "dgx-a100"},
      {{{"preset", "llama3-8b"}}, 16384, 4, "dgx-a100"},  // GQA: 32 query heads, 8 KV heads
      {{{"preset", "llama3-8b"}}, 32768, 8, "dgx-h100"},  // NVLS may take the all-gathers
      {{{"preset", "bert-large"}}, 2048, 4, "dgx-a100"},  // short: communication-bound steps
  };
  std::map<std::string, double> worst;  // per strategy(options): max |sim/closed − 1|
  for (const auto& c : cases)
    for (bool causal : {false, true})
      for (const std::string passes : {"fwd", "fwd+bwd"}) {
        std::vector<Variant> vs = variants;
        for (const auto& v : vs) {
          const Config cfg = config(c.model, c.seq, c.degree, v, causal, passes, c.cluster);
          CAPTURE(cfg.model.name);
          CAPTURE(c.seq);
          CAPTURE(c.degree);
          CAPTURE(c.cluster);
          CAPTURE(causal);
          CAPTURE(passes);
          CAPTURE(v.strategy);
          CAPTURE(v.options.dump());
          const SimSummary sim = simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
          const auto closed = closed_form(cfg);
          REQUIRE(closed);
          const double ratio = sim.step_time_s / closed->step_s;
          CAPTURE(ratio);
          double& w = worst[v.strategy + v.options.dump()];
          w = std::max(w, std::abs(ratio - 1));
          CHECK(std::abs(ratio - 1) < 0.02);
          // Ring collectives and sendrecvs: bytes exact ((P−1)/P·n per collective, n per pass).
          if (c.cluster == "dgx-a100") CHECK(std::abs(sim.bytes_sent_max / closed->bytes_sent - 1) < 1e-9);
        }
      }
  for (const auto& [name, w] : worst) MESSAGE("worst |sim/closed − 1| of " << name << ": " << w);
}

TEST_CASE("closed form vs simulator: Ulysses with replicated kv heads (kv_heads < P)") {
  for (const auto& v : {replicate_separate, replicate_fused})
    for (bool causal : {false, true}) {
      const Config cfg = config(gqa4, 16384, 8, v, causal, "fwd+bwd");
      CAPTURE(v.options.dump());
      CAPTURE(causal);
      const SimSummary sim = simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
      const auto closed = closed_form(cfg);
      REQUIRE(closed);
      CHECK(std::abs(sim.step_time_s / closed->step_s - 1) < 0.02);
      CHECK(std::abs(sim.bytes_sent_max / closed->bytes_sent - 1) < 1e-9);
    }
}

TEST_CASE("closed form vs simulator: batch 2, every collective's chunks strided (staging copies)") {
  // With B = 2 the sequence-layout tensors [B, H, c, d] of Ulysses have strided chunks as well as the
  // head-layout ones, as has the fused buffer [B, P, ·, d]: every all-to-all packs and unpacks a copy
  // of its tensor (rt::chunks_strided); all-gather-KV's and RSA's dim-1 collectives stage too. The
  // closed forms charge each copy as a copy op on the communication stream, exactly as the replay.
  std::vector<Variant> vs = variants;
  vs.push_back({"rsa", {{"grad_reduction", "reduce_scatter"}}});
  for (const auto& v : vs)
    for (const std::string passes : {"fwd", "fwd+bwd"}) {
      const Config cfg = config({{"preset", "llama2-7b"}}, 8192, 8, v, true, passes, "dgx-a100", 2);
      CAPTURE(v.strategy);
      CAPTURE(v.options.dump());
      CAPTURE(passes);
      const SimSummary sim = simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
      const auto closed = closed_form(cfg);
      REQUIRE(closed);
      CHECK(sim.step_time_s == doctest::Approx(closed->step_s).epsilon(1e-6));
    }
}

namespace {

// The memory model of `c` (variant `v`, passes `passes`) is the simulator's traced peak, to the byte.
void expect_traced_peak(const Config& c, const Variant& v, const std::string& passes) {
  CAPTURE(c.model.name);
  CAPTURE(c.strategy.degree);
  CAPTURE(c.workload.batch);
  CAPTURE(passes);
  CAPTURE(v.strategy);
  CAPTURE(v.options.dump());
  const auto m = memory_model(c);
  REQUIRE(m);
  CHECK(m->peak_bytes ==
        static_cast<double>(
            simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
}

}  // namespace

TEST_CASE("closed form and memory model vs simulator: one rank has one chunk, nothing to stage") {
  // P = 1: a collective's single chunk is the whole tensor, contiguous whatever the dim
  // (rt::chunks_strided), so neither the replay nor the closed forms charge a staging copy or buffer.
  std::vector<Variant> vs = variants;
  vs.push_back({"rsa", {{"grad_reduction", "reduce_scatter"}}});
  for (const auto& v : vs) {
    const Config c = config({{"preset", "bert-large"}}, 4096, 1, v, false, "fwd+bwd", "dgx-a100", 2);
    CAPTURE(v.strategy);
    CAPTURE(v.options.dump());
    const SimSummary sim = simulate(c, spsim::analysis::SimulateOptions::without_trace_file());
    const auto closed = closed_form(c);
    REQUIRE(closed);
    CHECK(sim.step_time_s == doctest::Approx(closed->step_s).epsilon(1e-6));
    CHECK(memory_model(c)->peak_bytes == static_cast<double>(sim.peak_memory_bytes));
  }
}

TEST_CASE("memory model vs simulator: every strategy and option is the traced peak") {
  std::vector<Variant> vs = variants;
  for (const auto& model : {Json{{"preset", "llama3-8b"}}, Json{{"preset", "bert-large"}}})
    for (int p : {2, 3, 4, 8})
      for (const std::string passes : {"fwd", "fwd+bwd"})
        for (const auto& v : vs) {
          if (v.strategy == "ulysses" && p == 3) continue;  // heads % 3 != 0
          expect_traced_peak(config(model, 6144, p, v, true, passes), v, passes);
        }
  for (const auto& v : {replicate_separate, replicate_fused}) {
    const Config c = config(gqa4, 4096, 8, v, false, "fwd+bwd");
    CAPTURE(v.options.dump());
    CHECK(memory_model(c)->peak_bytes ==
          static_cast<double>(
              simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
  }
  // H/Hkv = 16 (Q = 16K): the ring's separate backward holds aQ + 4aK + Q + 2K = 3Q + 10K at its end
  // (a = 2) against 2Q + 18K at the sum, so the end is the peak; packed is unchanged.
  const Json gqa16 = {{"hidden", 4096}, {"heads", 32}, {"kv_heads", 2}};
  for (int p : {2, 8})
    for (const auto& v : {variants[3], variants[6]}) {
      const Config c = config(gqa16, 4096, p, v, true, "fwd+bwd");
      expect_traced_peak(c, v, "fwd+bwd");
      if (v.options.contains("backward_sends")) continue;
      CHECK(memory_model(c)->peak_at == "backward ring, end");
    }
}

TEST_CASE("memory model vs simulator: batch 2, with the staging buffers of strided chunks") {
  // B = 2: the sequence-layout all-to-alls, the fused buffer and every dim-1 collective stage (pack and
  // unpack buffers alive from post to wait); the moments (strategies/<family>/memory.cpp) must still be
  // the traced peak, to the byte.
  std::vector<Variant> vs = variants;
  vs.push_back(replicate_separate);
  vs.push_back(replicate_fused);
  for (const auto& model : {Json{{"preset", "llama3-8b"}}, Json{{"preset", "bert-large"}}, gqa4})
    for (int p : {2, 8})
      for (const std::string passes : {"fwd", "fwd+bwd"})
        for (const auto& v : vs) {
          const bool replicates = v.options.contains("kv_replication");
          if (v.strategy == "ulysses" && replicates != (model == gqa4 && p == 8)) continue;
          expect_traced_peak(config(model, 4096, p, v, true, passes, "dgx-a100", 2), v, passes);
        }
}

TEST_CASE("memory model: the peaks of a small shape by hand") {
  // B = 1, H = Hkv = 4, d = 16, s = 64, P = 4 → c = 16 local tokens, bf16 (2 bytes). Bytes:
  //   Q = K = 4·16·16·2 = 2048 (q, k, v, o, do and their gradients), lse = 4·16·2 = 128;
  //   inputs q, k, v, do = 8192.
  // Ulysses (separate): head-sharded q, k, v are H/P·s·d = 1·64·16·2, the same 2048 each (T = 6144),
  //   lse H/P·s·2 = 128. Backward attention: inputs 8192 + o 2048 + q,k,v heads 6144 + o heads 2048
  //   + lse 128 + do heads 2048 + dq,dk,dv heads 6144 = 26752 (the largest: the gradients go to the
  //   sequence layout after the head-sharded q, k, v, o, lse are freed: 8192 + 2048 + 2048 + 6144 + 6144).
  //   fused: the backward re-layout holds permuted parts, send and receive buffers and the slices, 4T:
  //   8192 + 2048 + 2048 + 6144 + 4·6144 = 43008 (its forward re-layout: 8192 + 2T + 2048 + 2·2048 = 28672).
  // Ring (P = 4), backward_sends = separate: fp32 accumulators, 2·2048 = 4096 B per dq, dk or dv.
  //   At the sum of step 1 or 2: the fp32 dq 4096 + K/V in use and arriving and the block's dk, dv
  //   (6·2048) + the fp32 dk/dv accumulators in flight, arriving and their sum (6·4096): 8192 + o, lse
  //   2176 + 4096 + 12288 + 24576 = 51328, above step 0 (4096 + block dq, dk, dv 6144 + fp32 dk, dv
  //   8192 + K/V arriving 4096: 32896) and the end (4096 + two fp32 dk/dv pairs 16384 + dq, dk, dv
  //   6144: 36992).
  //   packed: gradients in the dtype from the start; step 2 holds the K/V block in use and the one
  //   arriving (4K), the accumulator in flight, the one arriving and the fresh partial (6K): 8192 +
  //   o, lse 2176 + dq, dk, dv 6144 + 10·2048 = 36992.
  // all-gather-KV: gathered K = F = 4·64·16·2 = 8192; backward attention: inputs 8192 + gathered k, v
  //   16384 + o, lse 2176 + dq 2048 + full-length dk, dv 16384 = 45184; but [B·Hkv = 4, s, d] cut along s
  //   has strided chunks, so the reduce-scatters pack both gradients (rt::chunks_strided): inputs 8192 +
  //   o 2048 + dq 2048 + full-length dk, dv 16384 + dk, dv 4096 + staging 16384 = 49152.
  const Json model = {{"hidden", 64}, {"heads", 4}, {"head_dim", 16}};
  auto peak = [&](const Variant& v) {
    const Config c = config(model, 64, 4, v, false, "fwd+bwd");
    const auto m = memory_model(c);
    REQUIRE(m);
    CHECK(m->peak_bytes ==
          static_cast<double>(
              simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
    return m->peak_bytes;
  };
  CHECK(peak(variants[0]) == 26752);
  CHECK(peak(variants[1]) == 43008);
  CHECK(peak(variants[2]) == 51328);
  CHECK(peak(variants[6]) == 36992);
  CHECK(peak(variants[5]) == 49152);
}

TEST_CASE("cost model: all-to-all on one DGX A100, direct (the tuner's pick) and pairwise") {
  // dgx-a100 (see models_test.cpp): NCCL Simple base 8.4 µs, NVLink step 9 µs, route 1 µs, 240 GB/s.
  // Direct: the 7 messages of n/8 leave at once and share the GPU's port: base + α + 7·(n/8)/B.
  // Pairwise: 7 steps of one n/8 message: base + 7·(α + (n/8)/B), which the tuner does not prefer.
  const double n = 64.0 * (1 << 20), alpha = 9e-6 + 1e-6, bw = 240e9;
  Config c = config({{"preset", "bert-large"}}, 4096, 8, variants[0], false, "fwd+bwd");
  CHECK(HardwareModel(c).collective_s(spsim::rt::CommKind::all_to_all, n) ==
        doctest::Approx(8.4e-6 + alpha + 7 * (n / 8) / bw).epsilon(1e-9));
  c.collectives.of(spsim::rt::CommKind::all_to_all) = "pairwise";
  CHECK(HardwareModel(c).collective_s(spsim::rt::CommKind::all_to_all, n) ==
        doctest::Approx(8.4e-6 + 7 * (alpha + (n / 8) / bw)).epsilon(1e-9));
}

TEST_CASE("cost model: bytes each strategy sends per rank, by hand") {
  // bert-large (H = Hkv = 16, d = 64), s = 4096, P = 8, bf16: a local q, k, v, o or gradient block is
  // 16·512·64·2 B = 1 MiB; a gathered K (all s tokens) is 8 MiB.
  //   Ulysses: 8 all-to-alls of one local block (q, k, v, o; dO, dq, dk, dv), 7/8 of each sent: 7 MiB.
  //   Ring Attention: K and V passed P−1 = 7 times forward and again backward (28 MiB), plus dK and dV:
  //   separate, P = 8 passes in fp32 (2 MiB each): 32 MiB, 60 MiB in all; packed, 7 passes in the
  //   dtype: 14 MiB, 42 MiB in all.
  //   all-gather-KV: AG of K and V and RS of dK and dV, 7/8 of 8 MiB each: 28 MiB.
  const double mib = 1 << 20;
  auto sent = [](const Variant& v) {
    return closed_form(config({{"preset", "bert-large"}}, 4096, 8, v, true, "fwd+bwd"))->bytes_sent;
  };
  CHECK(sent(variants[0]) == doctest::Approx(7 * mib));
  CHECK(sent(variants[1]) == doctest::Approx(7 * mib));
  CHECK(sent(variants[3]) == doctest::Approx(60 * mib));
  CHECK(sent(variants[6]) == doctest::Approx(42 * mib));
  CHECK(sent(variants[5]) == doctest::Approx(28 * mib));
}
