// End-to-end tests of `spsim check`: verdicts, diagnosis text, exit codes, --json and --dump.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_cli.hpp"

using namespace spsim_test;

TEST_CASE("spsim check rsa-colossalai: exits 1 and names the 1/world_size factor") {
  const auto r = run_spsim("check " + source_path("configs/checks/rsa-colossalai.json"));
  CHECK(r.code == 1);
  // P = 4: the Q/K/V-side gradients are 1/4 of the reference; the diagnosis comes from the best fit.
  for (const char* name : {"dWq", "dWk", "dWv", "dLN1.gamma", "dLN1.beta"})
    CHECK(r.out.find(std::string(name) + " is 0.2500 × reference (= 1/4 = 1/world_size)") !=
          std::string::npos);
  CHECK(r.out.find("dX differs, not by a uniform scale") != std::string::npos);
}

TEST_CASE("spsim check: the exact variants exit 0") {
  for (const char* cfg : {"rsa-allreduce-slice", "rsa-reduce-scatter", "rsa-ring"}) {
    CAPTURE(cfg);
    const auto r = run_spsim("check " + source_path(std::string("configs/checks/") + cfg + ".json"));
    CHECK(r.code == 0);
    CHECK(r.out.find("PASS") != std::string::npos);
  }
}

TEST_CASE("spsim check --json is parseable, versioned and deterministic") {
  const auto a = run_spsim("check --json " + source_path("configs/checks/rsa-colossalai.json"));
  const auto b = run_spsim("check --json " + source_path("configs/checks/rsa-colossalai.json"));
  CHECK(a.code == 1);
  CHECK(a.out == b.out);
  const auto j = nlohmann::json::parse(a.out);
  CHECK(j.at("schema_version") == 1);
  CHECK(j.at("pass") == false);
  bool found = false;
  for (const auto& t : j.at("tensors"))
    if (t.at("name") == "dWq") {
      found = true;
      CHECK(t.at("alpha").get<double>() == doctest::Approx(0.25).epsilon(1e-12));
    }
  CHECK(found);
}

TEST_CASE("spsim check --dump writes .npy files that numpy loads with the right shape and dtype") {
  const auto dir = temp_dir("dump");
  const auto r =
      run_spsim("check " + source_path("configs/checks/rsa-reduce-scatter.json") + " --dump " + dir.string());
  REQUIRE(r.code == 0);
  // The layer config: batch 2, seq 24, hidden 32; Wq is [heads*head_dim, hidden] = [32, 32].
  CHECK(std::filesystem::exists(dir / "strategy.dX.npy"));
  const auto py = run_shell("/usr/bin/python3 -c \"import numpy\"");
  if (py.code != 0) {
    MESSAGE("skipping the numpy read-back: /usr/bin/python3 cannot import numpy");
    return;
  }
  const auto load =
      run_shell("/usr/bin/python3 -c \"import numpy as n; a=n.load('" + (dir / "strategy.dX.npy").string() +
                "'); b=n.load('" + (dir / "reference.dWk.npy").string() +
                "'); print(a.shape, a.dtype, b.shape, b.dtype)\"");
  CHECK(load.code == 0);
  CHECK(load.out == "(2, 24, 32) float64 (16, 32) float64\n");
}

TEST_CASE("spsim check: bad input exits 2 with one message naming the path") {
  const auto dir = temp_dir("bad-check");
  struct Case {
    const char* what;
    std::string text;
    std::string expect;  // a fragment of the message
  };
  const std::string model =
      R"("model": { "hidden": 32, "heads": 4, "kv_heads": 2, "head_dim": 8, "ffn_hidden": 64 })";
  auto doc = [&](const std::string& workload, const std::string& strategy) {
    return "{ \"schema_version\": 1, " + model + ", \"workload\": " + workload +
           ", \"strategy\": " + strategy + " }";
  };
  const std::string wl = R"({ "seq_len": 24, "batch": 2, "scope": "layer" })";
  const Case cases[] = {
      {"malformed JSON", "{ \"schema_version\": 1, ", "JSON"},
      {"unknown key", doc(R"({ "seq_len": 24, "bogus": 1 })", R"({ "name": "rsa", "degree": 4 })"),
       "workload.bogus"},
      {"unknown strategy", doc(wl, R"({ "name": "nope", "degree": 4 })"), "strategy.name"},
      {"unknown variant",
       doc(wl, R"({ "name": "rsa", "degree": 4, "options": { "grad_reduction": "avg" } })"),
       "strategy.options.grad_reduction"},
      {"degree 0", doc(wl, R"({ "name": "rsa", "degree": 0 })"), "strategy.degree"},
      {"seq not divisible", doc(R"({ "seq_len": 25, "batch": 2 })", R"({ "name": "rsa", "degree": 4 })"),
       "25"},
      {"documents not summing to seq_len",
       doc(R"({ "seq_len": 24, "mask": { "kind": "document_causal", "documents": [10, 4] } })",
           R"({ "name": "rsa", "degree": 4 })"),
       "workload.mask.documents: the document lengths sum to 14"},
      {"window 0", doc(R"({ "seq_len": 24, "mask": { "kind": "sliding_window", "window": 0 } })",
                       R"({ "name": "rsa", "degree": 4 })"),
       "workload.mask.window"},
      {"unknown distribution",
       doc(R"({ "seq_len": 24, "mask": { "kind": "document_causal", "documents": { "distribution": "zipf",
           "max_len": 8 } } })",
           R"({ "name": "rsa", "degree": 4 })"),
       "uniform, exponential"},
      {"document not divisible by 2P",
       doc(R"({ "seq_len": 24, "mask": { "kind": "document_causal", "documents": [12, 12] } })",
           R"({ "name": "ring", "degree": 4, "options": { "layout": "document_zigzag" } })"),
       "document 0 has 12 tokens, not divisible by 2 x degree = 8"},
      {"dropout",
       "{ \"schema_version\": 1, \"model\": { \"hidden\": 32, \"heads\": 4, \"hidden_dropout\": 0.1 }, "
       "\"workload\": " + wl + ", \"strategy\": { \"name\": \"rsa\", \"degree\": 4 } }",
       "model.hidden_dropout: check compares gradients with dropout off"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto path = write_file(dir / "bad.json", c.text);
    const auto r = run_spsim("check " + path.string());
    CHECK(r.code == 2);
    CHECK(r.out.find(c.expect) != std::string::npos);
    CHECK(r.out.find("spsim: error:") != std::string::npos);
  }
  const auto missing = run_spsim("check " + (dir / "does-not-exist.json").string());
  CHECK(missing.code == 2);
  CHECK(missing.out.find("does-not-exist.json") != std::string::npos);
  // heads (4) not divisible by kv_heads (3)
  const auto gqa = write_file(
      dir / "gqa.json",
      R"({ "schema_version": 1, "model": { "hidden": 32, "heads": 4, "kv_heads": 3, "head_dim": 8 },
                                   "workload": { "seq_len": 24 }, "strategy": { "name": "rsa", "degree": 4 } })");
  const auto r = run_spsim("check " + gqa.string());
  CHECK(r.code == 2);
  CHECK(r.out.find("kv_heads") != std::string::npos);
}

TEST_CASE("spsim check megatron_sp: the exact settings exit 0, the ÷tp variant exits 1 naming 1/tp") {
  for (const char* cfg : {"megatron-sp", "megatron-tp", "megatron-sp-ring-zigzag", "megatron-sp-ulysses"}) {
    CAPTURE(cfg);
    const auto r = run_spsim("check " + source_path(std::string("configs/checks/") + cfg + ".json"));
    CHECK(r.code == 0);
    CHECK(r.out.find("PASS: all 18 tensors") != std::string::npos);
  }
  const auto r = run_spsim("check " + source_path("configs/checks/megatron-tp-div.json"));
  CHECK(r.code == 1);
  CHECK(r.out.find("layer megatron_sp (dx_reduction=sum_div, gradient_accumulation_fusion=false, "
                   "sequence_parallel=false), tp = 2") != std::string::npos);
  // tp = 2: the MLP block's input gradient is halved, so dLN2's gradients are exactly 1/2 of the truth.
  for (const char* name : {"dLN2.gamma", "dLN2.beta"})
    CHECK(r.out.find(std::string(name) + " is 0.5000 × reference (= 1/2 = 1/tp)") != std::string::npos);
  const auto j = nlohmann::json::parse(run_spsim("check --json " + source_path("configs/checks/megatron-tp-div.json")).out);
  CHECK(j.at("layer").at("name") == "megatron_sp");
  CHECK(j.at("layer").at("tp") == 2);
}

// Layouts the layer cannot take exit 2 with one message naming the key.
TEST_CASE("spsim check: impossible tensor-parallel layouts exit 2 naming the key") {
  const auto dir = temp_dir("megatron-bad");
  const auto doc = [](const std::string& model, const std::string& workload, const std::string& parallel,
                      const std::string& extra = "") {
    return R"({"schema_version": 1, "model": )" + model + R"(, "workload": )" + workload +
           R"(, "strategy": {"name": "ring"}, "parallel": )" + parallel + extra + "}";
  };
  const std::string m = R"({"hidden": 32, "heads": 8, "kv_heads": 4, "head_dim": 4, "ffn_hidden": 64})";
  const std::string w = R"({"seq_len": 48, "scope": "layer"})";
  struct Case {
    std::string name, text, where, says;
  };
  const std::vector<Case> cases = {
      {"heads", doc(R"({"hidden": 24, "heads": 6, "kv_heads": 6, "head_dim": 4, "ffn_hidden": 64})", w,
                    R"({"tp": 4, "cp": 1})"),
       "parallel.tp", "model.heads 6 is not divisible by tp 4"},
      {"kv_heads", doc(R"({"hidden": 48, "heads": 12, "kv_heads": 3, "head_dim": 4, "ffn_hidden": 64})", w,
                       R"({"tp": 2, "cp": 1})"),
       "parallel.tp", "model.kv_heads 3 and tp 2"},
      {"seq", doc(m, R"({"seq_len": 36, "scope": "layer"})", R"({"tp": 4, "cp": 2})"), "workload.seq_len",
       "multiple of cp × tp = 8"},
      {"attention", doc(m, R"({"seq_len": 48})", R"({"tp": 2, "cp": 1})"), "parallel.tp",
       "use workload.scope layer or model"},
      {"replicated", doc(m, w, R"({"tp": 2, "cp": 1})", R"(, "layer": {"name": "replicated"})"), "parallel.tp",
       "the replicated layer has no tensor parallelism"},
      {"cp",
       R"({"schema_version": 1, "model": )" + m + R"(, "workload": )" + w +
           R"(, "strategy": {"name": "ring", "degree": 4}, "parallel": {"tp": 2, "cp": 2}})",
       "parallel.cp", "parallel.cp 2 and strategy.degree 4"},
      {"option", doc(m, w, R"({"tp": 2, "cp": 1})", R"(, "layer": {"options": {"sequence_parallel": "yes"}})"),
       "layer.options.sequence_parallel", "valid choices: true, false"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto path = write_file(dir / (c.name + ".json"), c.text);
    const auto r = run_spsim("check " + path.string());
    CHECK(r.code == 2);
    CHECK(r.out.find(c.where) != std::string::npos);
    CHECK(r.out.find(c.says) != std::string::npos);
  }
  // The world must fit the cluster: simulate names parallel.tp.
  const auto path = write_file(dir / "world.json", doc(m, w, R"({"tp": 4, "cp": 4})",
                                                      R"(, "cluster": {"preset": "dgx-h100", "nodes": 1})"));
  const auto r = run_spsim("simulate " + path.string());
  CHECK(r.code == 2);
  CHECK(r.out.find("parallel.tp") != std::string::npos);
  CHECK(r.out.find("needs 16 GPUs; the cluster has 8") != std::string::npos);
}
