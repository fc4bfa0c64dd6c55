// The closed-form pieces (compute model, ring pass, ring collectives) and the memory model, against
// numbers derived by hand from the preset files and the strategy code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"
#include "strategies/layer.hpp"

using namespace spsim::analysis;

namespace {

Config rsa_config(int degree, std::int64_t seq, const std::string& reduction, Json model, int batch = 1,
                  const std::string& cluster = R"({"preset": "dgx-a100"})") {
  Json doc = {
      {"schema_version", 1},
      {"model", std::move(model)},
      {"workload", {{"seq_len", seq}, {"batch", batch}}},
      {"cluster", Json::parse(cluster)},
      {"strategy", {{"name", "rsa"}, {"degree", degree}, {"options", {{"grad_reduction", reduction}}}}}};
  return parse_config(doc, "");
}

// dgx-a100 (configs/clusters/dgx-a100.json, configs/hardware/): A100 bf16 peak 312 TFLOP/s, HBM
// 2039 GB/s, gemm efficiency 0.7, launch 3 µs; NVLink3 300 GB/s × 0.8 = 240 GB/s per direction,
// 0.5 µs per link, GPU → NVSwitch → GPU = 2 links; NCCL Simple: ring base 8.4 µs, NVLink step 9 µs
// (the preset's calibrated value), efficiency 1; LL: base 6.6 µs, NVLink step 0.6 µs, efficiency 1/4
// for all-reduce.
constexpr double peak = 312e12, hbm = 2039e9, launch = 3e-6, link_bw = 240e9, route = 1e-6;

}  // namespace

TEST_CASE("cost model: one softmax on the A100 compute model") {
  const Config c = rsa_config(8, 4096, "ring", {{"hidden", 1024}, {"heads", 16}});
  const HardwareModel hw(c);
  // softmax over [16, 512, 512] bf16: 6 flops per element; reads and writes 16·512² elements of 2 bytes;
  // a roofline op at the A100's softmax efficiency 0.8 (sim/compute/gemm_kernel.hpp prices GEMMs).
  const auto cost = spsim::rt::cost::softmax({16, 512, 512}, spsim::rt::DType::bf16);
  const double elems = 16.0 * 512 * 512, flops = 6 * elems, bytes = 2 * elems * 2;
  const double expected = std::max(flops / (peak * 0.8), bytes / (hbm * 0.8)) + launch;  // memory bound here
  CHECK(hw.op_time_s(cost) == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("cost model: a ring pass and ring collectives on one DGX A100") {
  const Config c = rsa_config(8, 4096, "ring", {{"hidden", 1024}, {"heads", 16}});
  const HardwareModel hw(c);
  const double mib = 1 << 20;
  // One sendrecv of 1 MiB: base + NVLink step + route latency + n / bandwidth.
  CHECK(hw.ring_pass_s(mib) == doctest::Approx(8.4e-6 + 9e-6 + route + mib / link_bw).epsilon(1e-9));
  // 64 MiB all-reduce: Simple wins; 2(P−1) = 14 steps of α + n/(P·B).
  const double n = 64 * mib;
  CHECK(hw.collective_s(spsim::rt::CommKind::all_reduce, n) ==
        doctest::Approx(8.4e-6 + 14 * (9e-6 + route + n / (8 * link_bw))).epsilon(1e-9));
  // Reduce-scatter of the same: P−1 = 7 steps.
  CHECK(hw.collective_s(spsim::rt::CommKind::reduce_scatter, n) ==
        doctest::Approx(8.4e-6 + 7 * (9e-6 + route + n / (8 * link_bw))).epsilon(1e-9));
  // 8 KiB all-reduce: LL's 0.6 µs step beats Simple's 9 µs despite its lower efficiency (NCCL's tuner
  // picks the least predicted time). LL's efficiency: half the bandwidth, its bus bandwidth capped at
  // Ampere's one-node llMaxBw of 87.7 GB/s: min(0.5, 87.7e9 / 240e9) = 0.365.
  const double small = 8192;
  const double ll = std::min(0.5, 87.7e9 / link_bw);
  CHECK(hw.collective_s(spsim::rt::CommKind::all_reduce, small) ==
        doctest::Approx(6.6e-6 + 14 * (0.6e-6 + route + small / (8 * ll * link_bw))).epsilon(1e-9));
}

TEST_CASE("cost model: a degree larger than the cluster is an InputError") {
  const Config c = rsa_config(16, 4096, "ring", {{"hidden", 1024}, {"heads", 16}});
  CHECK_THROWS_AS((void)HardwareModel(c), spsim::InputError);
}

TEST_CASE("cost model: RSA bytes sent per rank follow the collective formulas") {
  // bert-large shape: H = 16, d = 64, s = 4096, P = 8, c = 512, bf16. K chunk = 16·512·64·2 B = 1 MiB.
  // Ring passes: forward K and V, backward V and K: 4(P−1) passes of one chunk. The full-length
  // dK/dV is P chunks (8 MiB); ring all-reduce sends 2(P−1)/P of it per rank, reduce-scatter (P−1)/P,
  // the ring reduction P−1 chunk passes (the same bytes as reduce-scatter).
  const double chunk = 1 << 20, full = 8 * chunk, p = 8;
  const Json model = {{"hidden", 1024}, {"heads", 16}};
  const double passes = 4 * (p - 1) * chunk;
  CHECK(closed_form(rsa_config(8, 4096, "allreduce_slice", model))->bytes_sent ==
        doctest::Approx(passes + 2 * 2 * (p - 1) / p * full));
  CHECK(closed_form(rsa_config(8, 4096, "reduce_scatter", model))->bytes_sent ==
        doctest::Approx(passes + 2 * (p - 1) / p * full));
  CHECK(closed_form(rsa_config(8, 4096, "ring", model))->bytes_sent ==
        doctest::Approx(passes + 2 * (p - 1) * chunk));
}

TEST_CASE("cost model: strategies without a closed form give nullopt") {
  Config c = rsa_config(8, 4096, "ring", {{"hidden", 1024}, {"heads", 16}});
  c.workload.scope = spsim::models::Scope::layer;
  CHECK_FALSE(closed_form(c).has_value());
}

TEST_CASE(
    "memory model: RSA peak by hand for a small shape, all-reduce-then-slice vs reduce-scatter vs ring") {
  // B = 1, H = Hkv = 2, d = 32, s = 64, P = 8 → c = 8; bf16 (2 bytes). Sizes in bytes:
  //   Q = K = 2·8·32·2 = 1024, S = 2·8·64·2 = 2048, block = 2·8·8·2 = 256, F = 2·64·32·2 = 8192,
  //   two ring buffers = 2048; the harness's q, k, v, do = 4096 for the whole step, o = 1024 from the
  //   forward's V ring on.
  // Moments (strategies/model/memory.hpp, from the allocation order of strategies/rsa/rsa.cpp):
  //   forward K ring 4096 + 2048 + 2048 + 256 = 8448; softmax 4096 + 4096 = 8192;
  //   forward V ring 4096 + 4096 + 1024 + 2048 + 256 = 11520; backward V ring 4096 + 1024 + 4096 + 2048
  //   + 256 = 11520; softmax' 4096 + 1024 + 6144 + 1024 = 12288; dq ring 4096 + 1024 + 4096 + 1024 + 1024
  //   + 2048 + 256 = 13568; dK reduce 4096 + 1024 + 4096 + 1024 (dV) + 1024 (dq) = 11264 + the reduction:
  //     reduce_scatter: F + owned chunk + the staging copy F (the chunks of [B·Hkv = 2, s, d] along s
  //       are strided, so the backend packs them; rt::chunks_strided) = 17408 → 28672 (dV reduce:
  //       4096 + 1024 + 4096 + 17408 = 26624);
  //     allreduce_slice: F + owned chunk (the all-reduce is in place, the slice a new tensor) and,
  //       from the dV reduction on, the full dV buffer F that the dV chunk keeps alive (a view in
  //       PyTorch; strategies/rsa/rsa.cpp): 11264 + 9216 + 8192 = 28672;
  //     ring: accumulator + incoming + partial + block = 3·1024 + 256 = 3328 → 14592.
  const Json model = {{"hidden", 64}, {"heads", 2}, {"head_dim", 32}};
  const auto ar = memory_model(rsa_config(8, 64, "allreduce_slice", model));
  const auto rs = memory_model(rsa_config(8, 64, "reduce_scatter", model));
  const auto ring = memory_model(rsa_config(8, 64, "ring", model));
  REQUIRE(ar);
  REQUIRE(rs);
  REQUIRE(ring);
  CHECK(ar->peak_bytes == 28672);
  CHECK(ar->peak_at == "backward dK reduce");
  CHECK(rs->peak_bytes == 28672);
  CHECK(rs->peak_at == "backward dK reduce");
  CHECK(ring->peak_bytes == 14592);
  CHECK(ring->peak_at == "backward dK reduce");
  CHECK(ar->full_grad_buffer_bytes == 8192);
  CHECK(ring->full_grad_buffer_bytes == 0);
}

TEST_CASE("memory model: at realistic lengths the s/P × s score rows set the peak for every variant") {
  // bert-large attention, P = 8, s = 32768, bf16: c = 4096; S = 16·4096·32768·2 = 4 GiB, F = 16·32768·64·2
  // = 64 MiB. The peak is the backward softmax (3S + the rest) for every variant; all-reduce-then-slice
  // holds the full dV buffer F behind its dV chunk there too (a view in PyTorch), so it is F above ring.
  const Json model = {{"preset", "bert-large"}};
  const auto ar = memory_model(rsa_config(8, 32768, "allreduce_slice", model));
  const auto ring = memory_model(rsa_config(8, 32768, "ring", model));
  CHECK(ar->score_rows_bytes == 4.0 * (1ull << 30));
  CHECK(ar->peak_at == "backward softmax");
  CHECK(ring->peak_at == "backward softmax");
  CHECK(ar->peak_bytes == ring->peak_bytes + 64.0 * (1 << 20));
}

TEST_CASE("memory model: attention dropout adds the dropped-out rows S and their byte mask S/2 at the peak") {
  // The same shape with model.attention_dropout: rsa.cpp keeps the dropped-out probabilities (S) and
  // their mask (a byte per score: S/2 in bf16) from the forward until the dV reduction (the mask until
  // the dropout's backward just after it). Ring's peak moves to the dV reduction: q, k, v, do, o + probs,
  // dprobs, dropped (3S) + mask + the accumulator, incoming and partial chunks (3k) and a score block.
  // All-reduce-then-slice's moves to the forward's V ring, where the scores are still alive: q, k, v and
  // the step's dO (allocated before the forward) + scores, probs, dropped (3S) + mask + o + two ring buffers (2k) + a score block, which at c = 4096 > d
  // outweighs the full-length buffer F of its dV reduction.
  const double b = 1, h = 16, d = 64, s = 32768, p = 8, c = s / p, e = 2;
  const double q = b * h * c * d * e, k = q, S = b * h * c * s * e, F = b * h * s * d * e, blk = b * h * c * c * e;
  const double in = 2 * q + 2 * k, held = q, mask = S / e;
  const Json model = {{"preset", "bert-large"}, {"attention_dropout", 0.1}};
  const auto ring = memory_model(rsa_config(8, 32768, "ring", model));
  const auto ar = memory_model(rsa_config(8, 32768, "allreduce_slice", model));
  CHECK(ring->peak_at == "backward dV reduce");
  CHECK(ring->peak_bytes == in + held + 3 * S + mask + 3 * k + blk);
  CHECK(ar->peak_at == "forward V ring");
  CHECK(ar->peak_bytes == in + 3 * S + mask + q + 2 * k + blk);
  CHECK(ar->peak_bytes > in + held + 3 * S + mask + F + k);  // its dV reduction, below
}

namespace {

// An independent evaluation of the two peaks of strategies/model/memory.hpp that can be largest once S or F
// dominates (bytes, bf16): the backward softmax and the dK reduction.
// All-reduce-then-slice also keeps the full dV buffer F alive after the dV reduction (its chunk is a
// view in PyTorch; strategies/rsa/rsa.cpp).
double peak_by_hand(double b, double h, double d, double s, double p, bool ring) {
  const double c = s / p, e = 2, q = b * h * c * d * e, k = q, S = b * h * c * s * e, F = b * h * s * d * e;
  const double blk = b * h * c * c * e, in = q + 2 * k, held = 2 * q, dv_view = ring ? 0 : F;
  const double softmax = in + held + 3 * S + k + dv_view;
  const double red = ring ? 3 * k + blk : F + k;
  const double dk = in + held + 2 * S + k + q + red + dv_view;
  const double dq_ring = in + held + 2 * S + k + q + 2 * k + blk + dv_view;
  return std::max({softmax, dk, dq_ring});
}

}  // namespace

namespace {

// First seq_len of {step, 2·step, ..., max} whose hand-derived peak exceeds the A100-80GB's 85899345920
// bytes; every length is also checked against the memory model.
std::int64_t first_oom(const std::string& reduction, int degree, int batch, std::int64_t step,
                       std::int64_t max) {
  const std::string cluster = R"({"preset": "dgx-a100", "nodes": )" + std::to_string(degree / 8) + "}";
  for (std::int64_t s = step; s <= max; s += step) {
    const double hand = peak_by_hand(batch, 16, 64, static_cast<double>(s), degree, reduction == "ring");
    CAPTURE(s);
    CHECK(memory_model(rsa_config(degree, s, reduction, {{"preset", "bert-large"}}, batch, cluster))
              ->peak_bytes == doctest::Approx(hand));
    if (hand > 85899345920.0) return s;
  }
  return 0;
}

}  // namespace

TEST_CASE("memory model: where all-reduce-then-slice runs out of 80 GB and ring does not") {
  // The full-length buffer F outweighs the score rows S only while s/P < head_dim (S/F = c/d for MHA),
  // so the window lies at many ranks and a large batch: bert-large (H = 16, d = 64), P = 64, batch 8192.
  const auto oom_ar = first_oom("allreduce_slice", 64, 8192, 64, 8192);
  const auto oom_ring = first_oom("ring", 64, 8192, 64, 8192);
  MESSAGE("P = 64, batch 8192: allreduce_slice exceeds 80 GB from s = " << oom_ar
                                                                        << ", ring from s = " << oom_ring);
  CHECK(oom_ar > 0);
  CHECK(oom_ring > oom_ar);
  // At a realistic shape (batch 1, P = 8, s in steps of 4K up to 128K) the score rows decide alone:
  // 3S = 12·s² bytes passes 80 GiB near s = 85K for both variants.
  const auto real_ar = first_oom("allreduce_slice", 8, 1, 4096, 131072);
  const auto real_ring = first_oom("ring", 8, 1, 4096, 131072);
  CHECK(real_ar == 86016);  // 21 × 4096: 12·86016² = 88.8e9 > 85.9e9 > 12·81920² = 80.5e9
  CHECK(real_ring == real_ar);
}

TEST_CASE("memory model: scope model adds 16 bytes per parameter and recomputation keeps only layer inputs") {
  // llama2-7b: 32 layers; Adam mixed precision: 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32 master,
  // m, v) bytes per parameter (ZeRO, §3.1).
  Json doc = {{"schema_version", 1},
              {"model", {{"preset", "llama2-7b"}}},
              {"workload", {{"seq_len", 4096}, {"scope", "model"}}},
              {"cluster", {{"preset", "dgx-a100"}}},
              {"strategy", {{"name", "rsa"}, {"degree", 8}, {"options", {{"grad_reduction", "ring"}}}}}};
  const Config full = parse_config(doc, "");
  doc["workload"]["recompute"] = true;
  const Config recompute = parse_config(doc, "");
  const auto a = memory_model(full), b = memory_model(recompute);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->model_state_bytes == doctest::Approx(16 * spsim::strategies::model_parameters(full.model)));
  CHECK(b->model_state_bytes == a->model_state_bytes);
  CHECK(b->activations_bytes < a->activations_bytes / 10);  // 31 layers keep only x instead of ~everything
  CHECK(b->peak_bytes < a->peak_bytes);
}
