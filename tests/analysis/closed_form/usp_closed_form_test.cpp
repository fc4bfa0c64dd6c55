// The closed form and memory model of USP (Ulysses × Ring) against the simulator, the identities
// u = P → Ulysses and u = 1 → Ring Attention, and bytes and one memory peak by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/config/document.hpp"
#include "analysis/simulate/simulate.hpp"

using namespace spsim::analysis;

namespace {

Config config(const Json& model, std::int64_t seq, int degree, const std::string& strategy,
              const Json& options, bool causal, const std::string& passes,
              const std::string& cluster = "dgx-a100", int nodes = 1) {
  Json doc = {{"schema_version", 1},
              {"model", model},
              {"workload", {{"seq_len", seq}, {"passes", passes}, {"causal", causal}}},
              {"cluster", {{"preset", cluster}, {"nodes", nodes}}},
              {"strategy", {{"name", strategy}, {"degree", degree}, {"options", options}}}};
  return parse_config(doc, "");
}

// ulysses_degree u ("0": auto, gcd(P, 8) = 8 for the P = 8 here); kv heads replicated where u > kv_heads.
Json usp(int u, std::int64_t kv_heads, const std::string& fusion = "separate",
         const std::string& backward_sends = "separate") {
  return {{"ulysses_degree", std::to_string(u)},
          {"qkv_fusion", fusion},
          {"kv_replication", (u > 0 ? u : 8) > kv_heads ? "replicate" : "none"},
          {"backward_sends", backward_sends}};
}

const Json llama = {{"preset", "llama3-8b"}};                          // GQA: 32 query heads, 8 kv heads
const Json bert = {{"preset", "bert-large"}};                          // MHA: 16 heads
const Json gqa4 = {{"hidden", 4096}, {"heads", 32}, {"kv_heads", 4}};  // kv_heads 4 < u = 8: replication

// Simulates `cfg`, checks the closed form's step time within 2.5% (and, where every collective runs as a
// ring or pairwise exchange, its bytes exactly), and raises `worst` to |sim/closed − 1|.
void expect_agrees(const Config& cfg, bool exact_bytes, double& worst) {
  const SimSummary sim = simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
  const auto closed = closed_form(cfg);
  REQUIRE(closed);
  const double ratio = sim.step_time_s / closed->step_s;
  CAPTURE(ratio);
  worst = std::max(worst, std::abs(ratio - 1));
  // 2.5%: zigzag's half blocks have different shapes on different ranks (all queries × the first half
  // of the keys, or the second half of the queries × all keys), so a rank can wait for a slower
  // neighbour's pass, which the per-rank closed form does not follow (bert-large on dgx-h100, u = 2:
  // 2.04%).
  CHECK(std::abs(ratio - 1) < 0.025);
  if (exact_bytes) CHECK(std::abs(sim.bytes_sent_max / closed->bytes_sent - 1) < 1e-9);
}

}  // namespace

TEST_CASE("closed form vs simulator: USP within 2.5% for every Ulysses degree on one node") {
  // The closed form (strategies/usp/closed_form.cpp) is Ulysses' all-to-alls over the u GPUs of a group
  // (direct: base + α + (u−1)·(n/u)β on one NVSwitch) around the Ring Attention model at each ring
  // position on H/u heads over r = P/u groups (one sendrecv α + nβ per pass, per step
  // max(t_comm, t_compute + σ/(1+σ)·t_comm)); the slowest position sets the step. Every Ulysses and
  // ring group is alone on its GPUs' NVSwitch ports: uncontended.
  struct Case {
    Json model;
    std::int64_t kv_heads, seq;
    std::string cluster;
  };
  const std::vector<Case> cases = {
      {llama, 8, 16384, "dgx-a100"}, {bert, 16, 8192, "dgx-a100"}, {gqa4, 4, 16384, "dgx-a100"},
      {llama, 8, 32768, "dgx-h100"}, {bert, 16, 8192, "dgx-h100"},
  };
  std::map<std::string, double> worst;  // per model, cluster, u: max |sim/closed − 1|
  for (const auto& c : cases)
    for (int u : {1, 2, 4, 8, 0})
      for (bool causal : {false, true})
        for (const std::string passes : {"fwd", "fwd+bwd"}) {
          const Config cfg = config(c.model, c.seq, 8, "usp", usp(u, c.kv_heads), causal, passes, c.cluster);
          CAPTURE(cfg.model.name);
          CAPTURE(c.cluster);
          CAPTURE(u);
          CAPTURE(causal);
          CAPTURE(passes);
          // All-to-alls ((u−1)/u·n) and sendrecvs (n per pass): bytes exact on A100 (no NVLS).
          expect_agrees(cfg, c.cluster == "dgx-a100",
                        worst[cfg.model.name + " " + c.cluster + " u=" + std::to_string(u)]);
          if (passes == "fwd+bwd" && u != 8)  // the ring level's backward posted as TransformerEngine does
            expect_agrees(config(c.model, c.seq, 8, "usp", usp(u, c.kv_heads, "separate", "packed"), causal,
                                 passes, c.cluster),
                          c.cluster == "dgx-a100",
                          worst[cfg.model.name + " " + c.cluster + " u=" + std::to_string(u) + " packed"]);
        }
  for (const auto& [name, w] : worst) MESSAGE("worst |sim/closed − 1| of usp " << name << ": " << w);
}

TEST_CASE("closed form: USP with u = P is Ulysses, with u = 1 Ring Attention (zigzag)") {
  // u = P: one ring position, no passes, one block on H/P heads over all s: Ulysses' local attention.
  // u = 1: all-to-alls over groups of one cost nothing and send nothing (separate q, k, v: no packing
  // copies): Ring Attention with the zigzag layout.
  for (const auto& [model, kv_heads] : {std::pair{llama, 8}, std::pair{bert, 16}})
    for (bool causal : {false, true})
      for (const std::string passes : {"fwd", "fwd+bwd"})
        for (const std::string fusion : {"separate", "fused"}) {
          CAPTURE(kv_heads);
          CAPTURE(causal);
          CAPTURE(passes);
          CAPTURE(fusion);
          const auto whole =
              closed_form(config(model, 16384, 8, "usp", usp(8, kv_heads, fusion), causal, passes));
          const auto ulysses =
              closed_form(config(model, 16384, 8, "ulysses", {{"qkv_fusion", fusion}}, causal, passes));
          REQUIRE(whole);
          REQUIRE(ulysses);
          CHECK(whole->step_s == doctest::Approx(ulysses->step_s).epsilon(1e-12));
          CHECK(whole->bytes_sent == doctest::Approx(ulysses->bytes_sent).epsilon(1e-12));
          if (fusion == "fused") continue;
          const auto one = closed_form(config(model, 16384, 8, "usp", usp(1, kv_heads), causal, passes));
          const auto ring =
              closed_form(config(model, 16384, 8, "ring", {{"layout", "zigzag"}}, causal, passes));
          REQUIRE(one);
          REQUIRE(ring);
          CHECK(one->step_s == doctest::Approx(ring->step_s).epsilon(1e-12));
          CHECK(one->bytes_sent == doctest::Approx(ring->bytes_sent).epsilon(1e-12));
        }
}

TEST_CASE("cost model: bytes USP sends per rank, by hand") {
  // bert-large (H = Hkv = 16, d = 64), s = 4096, P = 8, bf16: a local q, k, v, o or gradient block is
  // 16·512·64·2 B = 1 MiB. With u = 2 (r = 4 ring groups): 8 all-to-alls (q, k, v, o; dO, dq, dk, dv)
  // send (u−1)/u of a block each, 4 MiB; a ring K/V block is 8 heads × 1024 tokens × 64 × 2 B = 1 MiB,
  // passed 2(r−1) = 6 times forward and 6 times backward (K, V), and the dK, dV accumulators r = 4
  // times each in fp32 (2 MiB): 4 + 6 + 6 + 16 = 32 MiB in all (the ring's backward_sends = separate).
  // u = 4 (r = 2): 8·3/4 = 6 MiB + 2·1 + 2·1 MiB (ring blocks 4 heads × 2048 tokens) + 2·2·2 MiB of
  // accumulators = 18 MiB.
  const double mib = 1 << 20;
  auto sent = [](int u) {
    return closed_form(config(bert, 4096, 8, "usp", usp(u, 16), true, "fwd+bwd"))->bytes_sent;
  };
  CHECK(sent(2) == doctest::Approx(32 * mib));
  CHECK(sent(4) == doctest::Approx(18 * mib));
}

TEST_CASE("memory model vs simulator: USP is the traced peak") {
  for (const auto& [model, kv_heads] : {std::pair{llama, 8}, std::pair{bert, 16}, std::pair{gqa4, 4}})
    for (int u : {1, 2, 4, 8})
      for (const std::string passes : {"fwd", "fwd+bwd"})
        for (const std::string variant : {"separate", "fused", "packed"}) {  // qkv_fusion, or backward_sends
          const Config c = config(model, 6144, 8, "usp",
                                  variant == "packed" ? usp(u, kv_heads, "separate", "packed") : usp(u, kv_heads, variant),
                                  true, passes);
          CAPTURE(c.model.name);
          CAPTURE(u);
          CAPTURE(passes);
          CAPTURE(variant);
          const auto m = memory_model(c);
          REQUIRE(m);
          CHECK(m->peak_bytes ==
                static_cast<double>(
                    simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
        }
}

TEST_CASE("memory model: USP peaks by hand, and u = P is Ulysses'") {
  // B = 1, H = Hkv = 4, d = 16, s = 64, P = 4, bf16: c = 16 local tokens; q, k, v, o, do and their
  // gradients are Q = K = 4·16·16·2 = 2048 B, lse L = 4·16·2 = 128, inputs q, k, v, do In = 8192.
  // u = 2, r = 2: the head-sharded q, k, v (2 heads × 32 tokens) are 2048 each, T = 6144; a ring K/V
  // block Kr = 2048, its fp32 accumulators 4096. Backward ring at the sum (r = 2, step 1): In 8192 + o
  // 2048 + q, k, v heads 6144 + o heads, lse 2176 + do heads 2048 + the fp32 dq 4096 + K/V in use and
  // the block's dk, dv 4·2048 + fp32 dk/dv accumulators in flight, arriving and their sum 6·4096
  // = 57472, above the forward ring (8192 + 6144 + 2176 + K/V in use 4096 + a block's o, lse 2176
  // = 22784) and the backward to sequence (8192 + 2048 + 2048 + 6144 + 6144 = 24576).
  // u = 1, r = 4: K/V in use and arriving at the sum as well, 6·2048: 8192 + 2048 + 6144 + 2176 + 2048
  // + 4096 + 12288 + 24576 = 61568 (Ring Attention's 51328 + the copies a group of one makes: T, o,
  // do heads).
  const Json small = {{"hidden", 64}, {"heads", 4}, {"head_dim", 16}};
  auto peak = [&](int u) {
    const Config c = config(small, 64, 4, "usp", usp(u, 4), false, "fwd+bwd");
    const auto m = memory_model(c);
    REQUIRE(m);
    CHECK(m->peak_bytes ==
          static_cast<double>(
              simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
    return m->peak_bytes;
  };
  CHECK(peak(2) == 57472);
  CHECK(peak(1) == 61568);
  for (const std::string fusion : {"separate", "fused"}) {
    CAPTURE(fusion);
    const auto whole = memory_model(config(llama, 6144, 8, "usp", usp(8, 8, fusion), true, "fwd+bwd"));
    const auto ulysses =
        memory_model(config(llama, 6144, 8, "ulysses", {{"qkv_fusion", fusion}}, true, "fwd+bwd"));
    CHECK(whole->peak_bytes == ulysses->peak_bytes);
  }
}

TEST_CASE("closed form vs simulator: USP across two DGX H100 nodes (P = 16)") {
  // u = 8: each Ulysses group is one node's NVSwitch; ring group j = {j, 8 + j} passes K/V between
  // the nodes, every GPU over its own NIC (one rail per GPU), so the 8 rings share no link and every
  // pass is one inter-node sendrecv α + nβ. u = 4, 2: the ring alternates NVLink and network hops and
  // each step is charged the slower one (HardwareModel::ring_pass_s); the all-to-alls stay in a node.
  std::map<std::string, double> worst;
  for (const auto& [model, kv_heads] : {std::pair{llama, 8}, std::pair{bert, 16}})
    for (int u : {8, 4, 2})
      for (bool causal : {false, true})
        for (const std::string passes : {"fwd", "fwd+bwd"}) {
          const Config cfg = config(model, 32768, 16, "usp", usp(u, kv_heads), causal, passes, "dgx-h100", 2);
          CAPTURE(cfg.model.name);
          CAPTURE(u);
          CAPTURE(causal);
          CAPTURE(passes);
          expect_agrees(cfg, true, worst[cfg.model.name + " u=" + std::to_string(u)]);
        }
  for (const auto& [name, w] : worst)
    MESSAGE("worst |sim/closed − 1| of usp 2 x dgx-h100 " << name << ": " << w);
}
