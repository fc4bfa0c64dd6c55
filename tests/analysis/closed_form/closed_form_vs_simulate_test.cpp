// The closed form and the memory model against the simulator (analysis::simulate), HF configs against
// presets, and run_compare with the real simulator.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/closed_form/closed_form.hpp"
#include "analysis/compare/compare.hpp"
#include "analysis/config/document.hpp"
#include "analysis/report/json.hpp"
#include "analysis/simulate/simulate.hpp"
#include "tests/support/helpers.hpp"

using namespace spsim::analysis;

namespace {

Config config(const Json& model, std::int64_t seq, int degree, const std::string& reduction,
              const std::string& cluster = "dgx-a100", int nodes = 1, const std::string& passes = "fwd+bwd") {
  Json doc = {
      {"schema_version", 1},
      {"model", model},
      {"workload", {{"seq_len", seq}, {"passes", passes}}},
      {"cluster", {{"preset", cluster}, {"nodes", nodes}}},
      {"strategy", {{"name", "rsa"}, {"degree", degree}, {"options", {{"grad_reduction", reduction}}}}}};
  return parse_config(doc, "");
}

const std::vector<std::string> variants = {"allreduce_slice_div", "allreduce_slice", "reduce_scatter",
                                           "ring"};

}  // namespace

TEST_CASE("closed form vs simulator: within 2% for every RSA variant on uncontended single-node presets") {
  // The closed form (analysis/closed_form/closed_form.hpp) is derived by hand, not from the replay: γ = the
  // roofline of DESIGN.md §6 applied to the op shapes of strategies/rsa/rsa.cpp; α-β = ring collectives
  // 2(P−1)(α + nβ/P) and (P−1)(α + nβ/P) and one sendrecv α + nβ per ring pass, with α, β from the
  // cluster's links and NCCL's protocol table; overlap = per ring step max(t_pass, t_compute +
  // σ/(1+σ)·t_pass) with σ the compute slowdown during communication. One SP group on one node is
  // uncontended: every GPU's NVSwitch port carries one flow per direction.
  struct Case {
    Json model;
    std::int64_t seq;
    int degree;
    std::string cluster;
    std::string passes;
  };
  const std::vector<Case> cases = {
      {{{"preset", "bert-large"}}, 4096, 8, "dgx-a100", "fwd+bwd"},
      {{{"preset", "bert-large"}}, 32768, 8, "dgx-a100", "fwd+bwd"},
      {{{"preset", "llama2-7b"}}, 16384, 8, "dgx-a100", "fwd+bwd"},
      {{{"preset", "llama3-8b"}}, 8192, 4, "dgx-a100", "fwd+bwd"},  // GQA: 32 query heads, 8 KV heads
      {{{"preset", "llama2-7b"}}, 8192, 8, "dgx-h100", "fwd+bwd"},  // NVLS may take the collectives
      {{{"preset", "bert-large"}}, 8192, 2, "dgx-a100", "fwd"},
      // Attention dropout: a kernel on the probabilities each way (rsa.cpp), in both.
      {{{"preset", "bert-large"}, {"attention_dropout", 0.1}}, 8192, 8, "dgx-a100", "fwd+bwd"},
  };
  for (const auto& c : cases)
    for (const auto& v : variants) {
      const Config cfg = config(c.model, c.seq, c.degree, v, c.cluster, 1, c.passes);
      CAPTURE(cfg.model.name);
      CAPTURE(c.seq);
      CAPTURE(c.cluster);
      CAPTURE(v);
      const SimSummary sim = simulate(cfg, spsim::analysis::SimulateOptions::without_trace_file());
      const auto closed = closed_form(cfg);
      REQUIRE(closed);
      CHECK(std::abs(sim.step_time_s / closed->step_s - 1) < 0.02);
      // Byte counts are exact where the collectives run as rings (A100: no NVLS; the closed form counts
      // ring bytes, and NVLS moves a different amount through the switch).
      if (c.cluster == "dgx-a100") CHECK(std::abs(sim.bytes_sent_max / closed->bytes_sent - 1) < 1e-9);
    }
}

TEST_CASE("memory model vs simulator: the hand-derived RSA peaks are the traced peaks") {
  // tests/analysis/closed_form/models_test.cpp derives 28672 bytes (allreduce_slice), 28672 (reduce_scatter)
  // and 14592 bytes (ring) for B = 1, H = 2, d = 32, s = 64, P = 8, bf16; the simulator tracks the trace's
  // allocations and frees.
  const Json model = {{"hidden", 64}, {"heads", 2}, {"head_dim", 32}};
  CHECK(simulate(config(model, 64, 8, "allreduce_slice"), spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes == 28672);
  CHECK(simulate(config(model, 64, 8, "reduce_scatter"), spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes == 28672);
  CHECK(simulate(config(model, 64, 8, "ring"), spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes == 14592);
  // And on real shapes the model is the traced peak for every variant and P.
  for (const auto& v : variants)
    for (int p : {2, 8}) {
      CAPTURE(v);
      CAPTURE(p);
      const Config c = config({{"preset", "llama2-7b"}}, 8192, p, v);
      CHECK(memory_model(c)->peak_bytes == static_cast<double>(simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes));
      // With attention dropout the dropped-out probabilities are a tensor more, held into the backward.
      const Config d = config({{"preset", "llama2-7b"}, {"attention_dropout", 0.1}}, 8192, p, v);
      const auto peak = static_cast<double>(
          simulate(d, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes);
      CHECK(memory_model(d)->peak_bytes == peak);
      CHECK(peak > memory_model(c)->peak_bytes);
    }
}

TEST_CASE("memory model vs simulator at layer and model scope: dropout adds what the trace adds") {
  // The layer-scope model is a bound built from moments, not the traced peak itself (the replicated
  // layer's own transients differ); what dropout adds to it must be what it adds to the trace: the
  // attention's dropped-out probabilities and mask at the layer's peak, and, at model scope, every other
  // layer's two hidden-dropout masks (a layer's own are freed before its attention's backward).
  for (const std::string scope : {"layer", "model"}) {
    CAPTURE(scope);
    auto cfg_of = [&](double p) {
      Json doc = {{"schema_version", 1},
                  {"model", {{"preset", "bert-large"}, {"layers", 3}, {"attention_dropout", p}, {"hidden_dropout", p}}},
                  {"workload", {{"seq_len", 8192}, {"scope", scope}}},
                  {"cluster", {{"preset", "dgx-a100"}}},
                  {"strategy", {{"name", "rsa"}, {"degree", 8}, {"options", {{"grad_reduction", "ring"}}}}}};
      return parse_config(doc, "");
    };
    const Config plain = cfg_of(0), drop = cfg_of(0.1);
    const auto traced = [](const Config& c) {
      return static_cast<double>(simulate(c, spsim::analysis::SimulateOptions::without_trace_file()).peak_memory_bytes);
    };
    CHECK(memory_model(drop)->peak_bytes - memory_model(plain)->peak_bytes == traced(drop) - traced(plain));
    CHECK(traced(drop) > traced(plain));
  }
}

TEST_CASE("a Hugging Face config.json gives the same simulated result as the equivalent preset") {
  // meta-llama/Llama-2-7b-hf's config.json (the fields spsim reads; the preset cites the same values;
  // hidden_act silu makes its MLP SwiGLU, as the preset's mlp says).
  spsim::test::TempDir dir;
  std::ofstream(dir.path() / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
    "num_hidden_layers": 32, "vocab_size": 32000, "hidden_act": "silu", "torch_dtype": "float16"})";
  for (const char* scope : {"attention", "layer"}) {
    CAPTURE(scope);
    Config hf = config({{"hf_config", (dir.path() / "config.json").string()}}, 8192, 8, "ring");
    Config preset = config({{"preset", "llama2-7b"}}, 8192, 8, "ring");
    hf.workload.scope = preset.workload.scope =
        std::string(scope) == "layer" ? spsim::models::Scope::layer : spsim::models::Scope::attention;
    const SimSummary a = simulate(hf, spsim::analysis::SimulateOptions::without_trace_file()), b = simulate(preset, spsim::analysis::SimulateOptions::without_trace_file());
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    CHECK(a.bytes_sent_max == b.bytes_sent_max);
  }
}

TEST_CASE("compare with the real simulator: identical JSON for any --jobs") {
  Json doc = {{"schema_version", 1},
              {"model", {{"preset", "bert-large"}}},
              {"workload", {{"seq_len", 4096}}},
              {"cluster", {{"preset", "dgx-a100"}}},
              {"strategy", {{"name", "rsa"}, {"degree", 8}}},
              {"sweep",
               {{"strategy.options.grad_reduction", variants},
                {"workload.seq_len", {4096, 8192, 12004}},
                {"cluster.nodes", {1, 2}}}}};
  const Config c = parse_config(doc, "");
  CompareOptions o;
  o.simulate = [](const Config& p) { return simulate(p, spsim::analysis::SimulateOptions::without_trace_file()); };
  o.jobs = 1;
  const std::string one = compare_json(run_compare(c, o));
  o.jobs = 3;
  const auto three = run_compare(c, o);
  CHECK(compare_json(three) == one);
  REQUIRE(three.rows.size() == 24);
  // Rows: grad_reduction slowest, then seq_len, nodes fastest; 12004 (rows 4 and 5 of each variant) is
  // not divisible by 8: those rows carry the strategy's reason.
  CHECK(three.rows[4].error.find("not divisible") != std::string::npos);
  CHECK(three.rows[5].error.find("not divisible") != std::string::npos);
  CHECK(three.rows[0].ok());
}
