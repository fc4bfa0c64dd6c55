// The megatron_sp layer strategy: gradient checks against the float64 reference (tp 1, 2, 4; tp × cp
// with every attention strategy as the CP level), the deliberately wrong ÷tp variant, its
// communication on the trace backend against closed forms, and the parameter shards.
#include <doctest/doctest.h>

#include <map>
#include <numeric>
#include <set>

#include "analysis/check/check.hpp"
#include "analysis/config/config.hpp"
#include "analysis/closed_form/closed_form.hpp"
#include "analysis/simulate/simulate.hpp"
#include "analysis/simulate/trace.hpp"
#include "models/random.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/threads/threads_comm.hpp"
#include "strategies/step.hpp"
#include "strategies/layer_strategy.hpp"
#include "tests/strategies/check_config.hpp"

using namespace spsim;

namespace {

// The strategies' shared check config (seq 48, 8 heads, head dim 4, batch 2) as a megatron_sp layer.
analysis::Config megatron(const std::string& strategy, strategies::Options options, int tp, int cp, bool sp,
                          bool causal, std::int64_t kv_heads, const std::string& dx_reduction = "sum") {
  analysis::Config c = strategies_test::config(strategy, std::move(options), cp, causal, true,
                                               models::Scope::layer);
  c.model.kv_heads = kv_heads;
  c.parallel.tp = tp;
  c.layer.name = "megatron_sp";
  c.layer.entry = strategies::find_layer_strategy("megatron_sp");
  c.layer.options = strategies::complete_layer_options(
      *c.layer.entry, {{"sequence_parallel", sp ? "true" : "false"}, {"dx_reduction", dx_reduction}},
      "layer.options");
  return c;
}

void expect_exact(const analysis::Config& cfg) {
  const auto res = analysis::run_check(cfg);
  REQUIRE(res.tensors.size() == 18u);
  for (const auto& t : res.tensors) {
    CAPTURE(t.name);
    CHECK(t.cmp.rel_err <= 1e-12);
    CHECK(t.cmp.pass);
  }
}

}  // namespace

// kv_heads 8 (MHA), 4 (split over tp 2 and 4) and 2 (at tp 4 each KV head is held by 2 ranks).
TEST_CASE("megatron_sp matches the reference to 1e-12 at tp 1, 2, 4, with and without sequence parallelism") {
  for (int tp : {1, 2, 4})
    for (bool sp : {true, false})
      for (bool causal : {false, true})
        for (std::int64_t kv : {8, 4, 2}) {
          CAPTURE(tp);
          CAPTURE(sp);
          CAPTURE(causal);
          CAPTURE(kv);
          expect_exact(megatron("ring", {}, tp, 1, sp, causal, kv));
        }
}

// Each attention strategy as the CP level on the TP rank's heads (8 / tp query heads; kv_heads / tp KV
// heads, or one held by tp / kv_heads ranks); Ulysses-based levels replicate KV heads where they are
// fewer than cp.
TEST_CASE("tp × cp: megatron_sp with every attention strategy matches the reference to 1e-12") {
  const std::vector<std::pair<std::string, strategies::Options>> levels = {
      {"rsa", {{"grad_reduction", "reduce_scatter"}}},
      {"ulysses", {{"kv_replication", "replicate"}}},
      {"ring", {{"layout", "contiguous"}}},
      {"ring", {{"layout", "zigzag"}}},
      {"ring", {{"layout", "striped"}}},
      {"allgather_kv", {}},
      {"usp", {{"kv_replication", "replicate"}}}};
  for (const auto& [tp, cp] : std::vector<std::pair<int, int>>{{2, 2}, {2, 4}, {4, 2}})
    for (const auto& [name, options] : levels)
      for (bool sp : {true, false})
        for (bool causal : {false, true})
          for (std::int64_t kv : {4, 2}) {  // kv 2 at tp 4: each KV head held by 2 ranks, with CP
            CAPTURE(tp);
            CAPTURE(cp);
            CAPTURE(name);
            CAPTURE(sp);
            CAPTURE(causal);
            CAPTURE(kv);
            expect_exact(megatron(name, options, tp, cp, sp, causal, kv));
          }
}

// dx_reduction sum_div divides the column-parallel blocks' input gradient by tp. dLN2.gamma = Σ_rows
// dh2 ⊙ x̂2 sees only the MLP block's input gradient dh2, so it is exactly 1/tp of the truth; dX and
// everything before the MLP mix the ÷tp branch with the correct residual path; the forward is untouched.
TEST_CASE("the ÷tp variant: dLN2 is exactly 1/tp of the reference, Y is right, the check fails") {
  for (bool sp : {true, false}) {
    CAPTURE(sp);
    const auto res = analysis::run_check(megatron("ring", {}, 2, 1, sp, true, 4, "sum_div"));
    CHECK_FALSE(res.pass());
    std::map<std::string, analysis::Comparison> by_name;
    for (const auto& t : res.tensors) by_name[t.name] = t.cmp;
    CHECK(by_name.at("Y").pass);
    CHECK(by_name.at("dW2").pass);  // W2, b2 and W1, b1 come before the ÷tp reduction in backward
    CHECK(by_name.at("dW1").pass);
    for (const char* n : {"dLN2.gamma", "dLN2.beta"}) {
      CAPTURE(n);
      CHECK_FALSE(by_name.at(n).pass);
      CHECK(by_name.at(n).alpha == doctest::Approx(0.5).epsilon(1e-12));
      CHECK(by_name.at(n).diagnosis == std::string(n) + " is 0.5000 × reference (= 1/2 = 1/tp)");
    }
    CHECK(by_name.at("dX").diagnosis.find("not by a uniform scale") != std::string::npos);
  }
}

// Shards: every parameter's shards over the TP ranks tile the whole tensor exactly once (or, for a
// replicated KV head, tp/kv_heads times), and take/put are inverse.
TEST_CASE("megatron_sp parameter shards tile each weight") {
  models::ModelSpec m;
  m.hidden = 16;
  m.heads = 8;
  m.head_dim = 2;
  m.ffn_hidden = 24;
  const auto& info = *strategies::find_layer_strategy("megatron_sp");
  const auto opts = strategies::complete_layer_options(info, {}, "layer.options");
  for (std::int64_t kv : {8, 4, 2})
    for (int tp : {1, 2, 4}) {
      CAPTURE(kv);
      CAPTURE(tp);
      m.kv_heads = kv;
      const auto names = info.params(m, 0, tp, opts);
      for (std::size_t i = 0; i < names.size(); ++i) {
        CAPTURE(names[i].name);
        const auto n = static_cast<std::size_t>(rt::numel(names[i].whole));
        std::vector<double> whole(n), count(n, 0.0);
        std::iota(whole.begin(), whole.end(), 1.0);
        for (int t = 0; t < tp; ++t) {
          const auto s = info.params(m, t, tp, opts)[i];
          const auto local = s.take(whole);
          CHECK(local.size() == static_cast<std::size_t>(rt::numel(s.local())));
          std::vector<double> back(n, 0.0);
          s.put(local, back);
          for (std::size_t j = 0; j < n; ++j)
            if (back[j] != 0) {
              CHECK(back[j] == whole[j]);
              count[j] += 1;
            }
        }
        const bool kv_param = names[i].name == "wk" || names[i].name == "bk" || names[i].name == "wv" ||
                              names[i].name == "bv";
        const double copies = names[i].dim < 0 ? tp : (kv_param && kv < tp ? static_cast<double>(tp) / kv : 1);
        for (double c : count) CHECK(c == copies);
      }
    }
}

// Communication per rank on the trace backend, tp 4, cp 1, one layer of B = 2 × 48 tokens, hidden 32,
// bf16 (e = 2): a = B·s·hidden·e bytes is one activation of the whole chunk.
//   sequence parallelism: forward 2 all-gathers (into QKV and W1) and 2 reduce-scatters (out of Wo and
//   W2), n = a each; backward 4 all-gathers (W2's and Wo's output gradients, the LN outputs h2 and h1
//   again for the weight gradients) and 2 reduce-scatters (the input gradients of W1 and QKV).
//   without: forward 2 all-reduces (Wo, W2 outputs), backward 2 (the input gradients of W1 and QKV).
// Weight gradients: the sharded ones are summed over the rank's own shard group (alone at cp = dp = 1:
// n = its shard), the LayerNorm ones and bo, b2 over all 4 ranks with sequence parallelism (6·hidden
// elements), over the rank alone without it (LN) and over all 4 (bo, b2).
TEST_CASE("megatron_sp: collectives per layer against the closed form") {
  for (bool sp : {true, false}) {
    CAPTURE(sp);
    analysis::Config cfg = megatron("ring", {}, 4, 1, sp, true, 4);
    cfg.workload.dtype = rt::DType::bf16;
    const auto traces = analysis::trace_config(cfg, 1e9);
    REQUIRE(traces.size() == 4u);
    const double e = 2, a = 2 * 48 * 32 * e, h = 32;
    for (const auto& tr : traces) {
      std::map<rt::trace::GroupId, std::size_t> size;
      for (const auto& g : tr.groups) size[g.id] = g.members.size();
      std::map<std::string, int> count;
      std::map<std::string, double> bytes;
      double grads_world = 0;
      std::string phase = "forward";
      for (const auto& rec : tr.records) {
        if (const auto* b = std::get_if<rt::trace::PhaseBegin>(&rec)) phase = b->name;
        const auto* op = std::get_if<rt::trace::CommOp>(&rec);
        if (!op) continue;
        const std::size_t members = size.at(op->group);
        if (op->kind == rt::trace::CommKind::all_reduce && members == 4 && phase == "backward" &&
            static_cast<double>(op->bytes) != a) {
          grads_world += static_cast<double>(op->bytes);
          continue;
        }
        if (members != 4) continue;  // a shard's own group: nothing to sum with anyone
        const std::string key = phase + " " + std::string(rt::comm_kind_name(op->kind));
        ++count[key];
        bytes[key] += static_cast<double>(op->bytes);
      }
      if (sp) {
        CHECK(count["forward all_gather"] == 2);
        CHECK(count["forward reduce_scatter"] == 2);
        CHECK(count["backward all_gather"] == 4);
        CHECK(count["backward reduce_scatter"] == 2);
        CHECK(bytes["forward all_gather"] == 2 * a);
        CHECK(bytes["forward reduce_scatter"] == 2 * a);
        CHECK(bytes["backward all_gather"] == 4 * a);
        CHECK(bytes["backward reduce_scatter"] == 2 * a);
        CHECK(count["forward all_reduce"] == 0);
        CHECK(grads_world == 6 * h * e);  // ln1, ln2 (γ, β), bo, b2
      } else {
        CHECK(count["forward all_reduce"] == 2);
        CHECK(bytes["forward all_reduce"] == 2 * a);
        CHECK(count["backward all_reduce"] == 2);
        CHECK(bytes["backward all_reduce"] == 2 * a);
        CHECK(count["forward all_gather"] + count["backward all_gather"] == 0);
        CHECK(grads_world == 2 * h * e);  // bo, b2
      }
    }
  }
}

// Dropout (model.hidden_dropout, model.attention_dropout) in the trace: each residual add becomes a fused
// dropout-add on the rank's rows (n/tp of them with sequence parallelism, after the reduce-scatter) and
// the backward gets a dropout backward on each branch; rsa's unfused attention drops out its [B·H/tp,
// s, s] probabilities. Bytes from runtime/cost.hpp's closed form: read x and the residual, write y and a
// byte of mask; backward read dy and the mask, write dx.
TEST_CASE("dropout: the fused dropout-adds and the attention dropout in the trace, with their bytes") {
  for (bool sp : {true, false}) {
    CAPTURE(sp);
    analysis::Config cfg = megatron("rsa", {{"grad_reduction", "reduce_scatter"}}, 2, 1, sp, true, 8);
    cfg.workload.dtype = rt::DType::bf16;
    const auto count_ops = [](const analysis::Config& c) {
      std::map<std::string, std::pair<int, double>> out;  // "phase name" -> (count, bytes)
      const auto traces = analysis::trace_config(c, 1e9);
      std::string phase = "forward";
      for (const auto& rec : traces.front().records) {
        if (const auto* b = std::get_if<rt::trace::PhaseBegin>(&rec)) phase = b->name;
        if (const auto* op = std::get_if<rt::trace::ComputeOp>(&rec)) {
          auto& [n, bytes] = out[phase + " " + std::string(op->name)];
          ++n;
          bytes += static_cast<double>(op->bytes_read + op->bytes_written);
        }
      }
      return out;
    };
    const auto plain = count_ops(cfg);
    CHECK(plain.count("forward dropout") == 0);
    CHECK(plain.count("backward dropout_backward") == 0);
    cfg.model.hidden_dropout = 0.1;
    cfg.model.attention_dropout = 0.1;
    const auto with = count_ops(cfg);
    // seq 48, batch 2, hidden 32 (8 heads of 4), tp 2: rows per rank 96 (48 with sequence parallelism);
    // the probabilities [2 · 8/2, 48, 48].
    const double e = 2, rows = sp ? 48 : 96, hidden = 32, x = rows * hidden, probs = 2 * 4 * 48 * 48;
    CHECK(with.at("forward dropout").first == 3);
    CHECK(with.at("forward dropout").second == 2 * (2 * x * e + x * e + x) + (probs * e + probs * e + probs));
    CHECK(with.at("backward dropout_backward").first == 3);
    CHECK(with.at("backward dropout_backward").second == 2 * (x * e + x + x * e) + (probs * e + probs + probs * e));
    // The two forward residual adds are the dropout-adds now; nothing else changed.
    const auto n_of = [](const auto& ops, const std::string& key) {
      const auto it = ops.find(key);
      return it == ops.end() ? 0 : it->second.first;
    };
    CHECK(n_of(with, "forward add") == n_of(plain, "forward add") - 2);
    CHECK(with.at("forward linear").first == plain.at("forward linear").first);
    CHECK(with.at("backward linear_backward").second == plain.at("backward linear_backward").second);
  }
}

TEST_CASE("gradient_accumulation_fusion: every weight-gradient GEMM accumulates into fp32, nothing else") {
  // tp 2, GeLU MLP: four weight matrices per rank (Q/K/V and W1 column-parallel, Wo and W2 row-parallel;
  // Q, K and V are three), each a linear_backward whose first GEMM is dW. With the option each such GEMM
  // moves 8 bytes per element of dW in its epilogue (fp32 read and written back); dX GEMMs, the forward
  // and the op counts do not change, and the check still passes (a one-dtype device computes as usual).
  for (bool sp : {true, false}) {
    CAPTURE(sp);
    analysis::Config cfg = megatron("rsa", {{"grad_reduction", "reduce_scatter"}}, 2, 1, sp, true, 8);
    cfg.workload.dtype = rt::DType::bf16;
    struct Seen {
      int dw_gemms = 0, fp32_dw = 0, other_fp32 = 0, ops = 0;
    };
    const auto scan = [](const analysis::Config& c) {
      Seen seen;
      const auto traces = analysis::trace_config(c, 1e9);
      for (const auto& rec : traces.front().records) {
        const auto* op = std::get_if<rt::trace::ComputeOp>(&rec);
        if (op == nullptr) continue;
        ++seen.ops;
        bool first = true;
        for (const rt::GemmShape& g : op->kernels().gemms) {
          const bool dw = first && op->name == "linear_backward";
          seen.dw_gemms += dw ? 1 : 0;
          if (g.c_bytes == 8) ++(dw ? seen.fp32_dw : seen.other_fp32);
          first = false;
        }
      }
      return seen;
    };
    const Seen plain = scan(cfg);
    CHECK(plain.dw_gemms == 6);
    CHECK(plain.fp32_dw == 0);
    cfg.layer.options["gradient_accumulation_fusion"] = "true";
    const Seen fused = scan(cfg);
    CHECK(fused.dw_gemms == 6);
    CHECK(fused.fp32_dw == 6);
    CHECK(fused.other_fp32 == 0);
    CHECK(fused.ops == plain.ops);
    cfg.workload.dtype = rt::DType::f64;
    expect_exact(cfg);
  }
}

TEST_CASE("gradient_accumulation_fusion: fp32 main gradients hold 2 bytes more per parameter, in bf16 only") {
  // Model scope, 2 layers, tp 2: rank 0 holds its layer shards and 1/tp of the embedding. With the
  // option its model state grows by 2 bytes per parameter it holds (4-byte main gradients instead of
  // 2-byte ones); in float32 nothing changes.
  analysis::Config cfg = megatron("rsa", {{"grad_reduction", "reduce_scatter"}}, 2, 1, true, true, 8);
  cfg.workload.scope = models::Scope::model;
  cfg.model.layers = 2;
  cfg.model.vocab = 100;
  cfg.workload.dtype = rt::DType::bf16;
  cfg.cluster = analysis::load_cluster_argument("dgx-h100");
  double held = static_cast<double>(cfg.model.vocab * cfg.model.hidden) / 2;
  for (const auto& s : strategies::step_shards(analysis::step_config(cfg), 0))
    held += static_cast<double>(cfg.model.layers * rt::numel(s.local()));
  const auto peak = [](const analysis::Config& c) {
    return static_cast<double>(analysis::simulate(c).peak_memory_bytes);
  };
  const double plain = peak(cfg);
  cfg.layer.options["gradient_accumulation_fusion"] = "true";
  CHECK(peak(cfg) - plain == 2 * held);
  cfg.workload.dtype = rt::DType::f32;
  const double fused32 = peak(cfg);
  cfg.layer.options["gradient_accumulation_fusion"] = "false";
  CHECK(peak(cfg) == fused32);
}

// The groups of tp 2 × cp 2 × dp 2 (TP innermost: world rank r is TP rank r mod 2, CP rank ⌊r/2⌋ mod 2,
// DP replica ⌊r/4⌋), sequence parallelism on: rank 0's TP collectives run over {0, 1}, its ring passes
// over its CP group {0, 2}, its sharded weights' gradients over the ranks with its TP rank {0, 2, 4, 6}
// and the LayerNorm (and bo, b2) gradients over all 8.
TEST_CASE("megatron_sp: TP, CP and gradient groups of tp 2 × cp 2 × dp 2") {
  analysis::Config cfg = megatron("ring", {}, 2, 2, true, true, 4);
  cfg.parallel.dp = 2;
  cfg.workload.dtype = rt::DType::bf16;
  const auto traces = analysis::trace_config(cfg, 1e9);
  REQUIRE(traces.size() == 8u);
  std::map<rt::trace::GroupId, std::vector<int>> members;
  for (const auto& g : traces[0].groups) members[g.id] = g.members;
  std::set<std::vector<int>> tp_groups, p2p_groups, grad_groups;
  for (const auto& rec : traces[0].records) {
    const auto* op = std::get_if<rt::trace::CommOp>(&rec);
    if (!op) continue;
    const auto& m = members.at(op->group);
    if (op->kind == rt::trace::CommKind::all_gather || op->kind == rt::trace::CommKind::reduce_scatter)
      tp_groups.insert(m);
    if (op->kind == rt::trace::CommKind::sendrecv) p2p_groups.insert(m);
    if (op->kind == rt::trace::CommKind::all_reduce) grad_groups.insert(m);
  }
  CHECK(tp_groups == std::set<std::vector<int>>{{0, 1}});
  CHECK(p2p_groups == std::set<std::vector<int>>{{0, 2}});
  CHECK(grad_groups == std::set<std::vector<int>>{{0, 2, 4, 6}, {0, 1, 2, 3, 4, 5, 6, 7}});
}

// Full activation recomputation: each layer keeps only its input and runs forward again just before its
// backward. The gradients are the same math (checked exactly), and the backward phase of the trace holds
// the forward's ops once more: its FLOPs and the bytes it sends are those of backward plus forward.
TEST_CASE("recomputation: exact gradients, and backward = backward + forward in the trace") {
  for (const char* layer : {"replicated", "megatron_sp"}) {
    CAPTURE(layer);
    analysis::Config cfg = megatron("ring", {{"layout", "zigzag"}}, layer == std::string("replicated") ? 1 : 2,
                                    2, true, true, 4);
    if (layer == std::string("replicated")) {
      cfg.layer.name = "replicated";
      cfg.layer.entry = strategies::find_layer_strategy("replicated");
      cfg.layer.options = {};
    }
    cfg.workload.recompute = true;
    expect_exact(cfg);
    cfg.workload.dtype = rt::DType::bf16;
    struct Totals {
      double flops = 0, sent = 0;
    };
    auto phases = [&](bool recompute) {
      cfg.workload.recompute = recompute;
      std::map<std::string, Totals> out;
      const auto traces = analysis::trace_config(cfg, 1e9);
      std::string phase = "forward";
      for (const auto& rec : traces[0].records) {
        if (const auto* b = std::get_if<rt::trace::PhaseBegin>(&rec)) phase = b->name;
        if (const auto* op = std::get_if<rt::trace::ComputeOp>(&rec)) out[phase].flops += op->flops;
        if (const auto* op = std::get_if<rt::trace::CommOp>(&rec); op && op->kind != rt::trace::CommKind::all_reduce)
          out[phase].sent += static_cast<double>(op->bytes);
      }
      return out;
    };
    auto plain = phases(false), again = phases(true);
    CHECK(again["forward"].flops == plain["forward"].flops);
    CHECK(again["backward"].flops == doctest::Approx(plain["backward"].flops + plain["forward"].flops).epsilon(1e-12));
    CHECK(again["backward"].sent == plain["backward"].sent + plain["forward"].sent);
  }
}

// A SwiGLU MLP (model.mlp): the up projection W3 is column-parallel like W1 (its input gradient joins
// W1's in one reduction), and the 20 tensors of the layer match the reference.
TEST_CASE("SwiGLU: replicated and megatron_sp layers match the reference to 1e-12") {
  for (int tp : {1, 2, 4})
    for (bool sp : {true, false}) {
      CAPTURE(tp);
      CAPTURE(sp);
      analysis::Config cfg = megatron("ring", {{"layout", "zigzag"}}, tp, 2, sp, true, 2);
      cfg.model.mlp = models::Mlp::swiglu;
      const auto res = analysis::run_check(cfg);
      REQUIRE(res.tensors.size() == 20u);
      for (const auto& t : res.tensors) {
        CAPTURE(t.name);
        CHECK(t.cmp.rel_err <= 1e-12);
      }
    }
  analysis::Config replicated = strategies_test::config("ulysses", {}, 4, true, false, models::Scope::layer);
  replicated.model.mlp = models::Mlp::swiglu;
  const auto res = analysis::run_check(replicated);
  REQUIRE(res.tensors.size() == 20u);
  CHECK(res.pass());
}

// Recomputation over several layers: the step with workload.recompute computes exactly what it computes
// without (same ops on the same data, in float64): Y, dX and every rank's first-layer weight gradients,
// for the replicated layer and megatron_sp, 3 layers.
TEST_CASE("recomputation over 3 layers: the same outputs and gradients, exactly") {
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    analysis::Config cfg = megatron("ring", {{"layout", "zigzag"}}, tp, 2, true, true, 4);
    if (tp == 1) {
      cfg.layer.name = "replicated";
      cfg.layer.entry = strategies::find_layer_strategy("replicated");
      cfg.layer.options = {};
    }
    cfg.workload.scope = models::Scope::model;
    cfg.model.layers = 3;
    auto run = [&](bool recompute) {
      strategies::StepConfig step = analysis::check_step_config(cfg);
      step.workload.recompute = recompute;
      const int world = tp * 2;
      std::vector<std::vector<double>> out(static_cast<std::size_t>(world));
      rt::run_ranks(world, [&](rt::Comm& comm) {
        rt::CpuDevice dev(rt::DType::f64);
        const strategies::StepData data{
            [&](strategies::StepInput which, const rt::Shape& shape, const rt::Positions&) {
              return dev.from_host(models::random_vector(rt::numel(shape),
                                                         100 * static_cast<std::uint64_t>(which) +
                                                             static_cast<std::uint64_t>(comm.rank()),
                                                         1.0),
                                   shape);
            },
            [&](int layer, const strategies::ParamShard& s) {
              return strategies_test::seeded_weight(dev, layer, s, 0.1);
            },
            [&](std::int64_t elements) { return dev.empty({elements}); }};
        strategies::Step s(step, cfg.strategy.info(), dev, comm, data);
        s.forward();
        s.backward();
        auto& mine = out[static_cast<std::size_t>(comm.rank())];
        for (const auto& t : s.outputs()) {
          const auto h = dev.to_host(t);
          mine.insert(mine.end(), h.begin(), h.end());
        }
        for (const auto& t : s.weight_grads().tensors) {
          const auto h = dev.to_host(t);
          mine.insert(mine.end(), h.begin(), h.end());
        }
      });
      return out;
    };
    const auto plain = run(false), again = run(true);
    REQUIRE(plain.size() == again.size());
    for (std::size_t r = 0; r < plain.size(); ++r) {
      CAPTURE(r);
      REQUIRE(!plain[r].empty());
      CHECK(plain[r] == again[r]);
    }
  }
}
