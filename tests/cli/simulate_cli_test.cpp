// `spsim simulate` end to end: --json is deterministic and starts with schema_version, bad input exits 2.
#include <doctest/doctest.h>

#include "tests/cli/run_cli.hpp"

using spsim_test::run_spsim;
using spsim_test::source_path;

TEST_CASE("spsim simulate --json is byte-identical across runs and starts with schema_version") {
  const std::string cfg = source_path("configs/experiments/rsa-reduce-scatter-dgx-a100.json");
  const auto a = run_spsim("simulate " + cfg + " --json");
  const auto b = run_spsim("simulate " + cfg + " --json");
  REQUIRE(a.code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.rfind("{\n  \"schema_version\": 1,", 0) == 0);
}

TEST_CASE("spsim simulate prints the tables and writes --trace") {
  const auto dir = spsim_test::temp_dir("replay-cli");
  const auto trace = dir / "t.json";
  const auto r = run_spsim("simulate " + source_path("configs/experiments/rsa-ring-dgx-a100.json") +
                           " --trace " + trace.string());
  REQUIRE(r.code == 0);
  CHECK(r.out.find("step time") != std::string::npos);
  CHECK(r.out.find("exposed communication") != std::string::npos);
  CHECK(std::filesystem::file_size(trace) > 0);
}

TEST_CASE("spsim simulate: bad input exits 2 with the JSON path") {
  const auto dir = spsim_test::temp_dir("replay-cli-bad");
  const std::string base = R"({ "schema_version": 1, "name": "bad", "model": { "preset": "bert-large" },
    "workload": { "seq_len": 4096, "scope": "attention" },
    "strategy": { "name": "rsa", "degree": DEGREE, "options": { "grad_reduction": "ring" } },
    "cluster": CLUSTER, "simulation": { "compute_slowdown": SLOW } })";
  struct Case {
    const char* degree;
    const char* cluster;
    const char* slowdown;
    const char* where;
  };
  const Case cases[] = {
      {"16", R"({ "preset": "dgx-a100" })", "0.1", "strategy.degree"},
      {"8", R"({ "preset": "dgx-z100" })", "0.1", "cluster.preset"},
      {"8", R"({ "preset": "dgx-a100", "nodes": 0 })", "0.1", "cluster.nodes"},
      {"8", R"({ "preset": "dgx-a100" })", "-1", "simulation.compute_slowdown"},
  };
  int i = 0;
  for (const Case& c : cases) {
    CAPTURE(c.where);
    std::string text = base;
    text.replace(text.find("DEGREE"), 6, c.degree);
    text.replace(text.find("CLUSTER"), 7, c.cluster);
    text.replace(text.find("SLOW"), 4, c.slowdown);
    const auto path = spsim_test::write_file(dir / ("c" + std::to_string(i++) + ".json"), text);
    const auto r = run_spsim("simulate " + path.string());
    CHECK(r.code == 2);
    CHECK(r.out.find(c.where) != std::string::npos);
  }
  CHECK(run_spsim("simulate " + (dir / "missing.json").string()).code == 2);
}

TEST_CASE("spsim simulate / compare --cluster: a preset or a cluster file replaces the config's cluster") {
  const std::string cfg = source_path("configs/experiments/rsa-reduce-scatter-dgx-a100.json");
  const auto a100 = run_spsim("simulate " + cfg + " --json");
  const auto h100 = run_spsim("simulate " + cfg + " --json --cluster dgx-h100");
  // configs/clusters/dgx-h100.json is a complete cluster section (the preset's own file).
  const auto file =
      run_spsim("simulate " + cfg + " --json --cluster " + source_path("configs/clusters/dgx-h100.json"));
  REQUIRE(a100.code == 0);
  REQUIRE(h100.code == 0);
  REQUIRE(file.code == 0);
  CHECK(a100.out.find("\"gpu\": \"a100-sxm4-80gb\"") != std::string::npos);
  CHECK(h100.out.find("\"gpu\": \"h100-sxm5-80gb\"") != std::string::npos);
  CHECK(a100.out.find("h100") == std::string::npos);
  CHECK(file.out.find("\"gpu\": \"h100-sxm5-80gb\"") != std::string::npos);
  // compare: the same sweep on H100s (faster compute and links) gives other step times.
  const std::string sweep_cfg = source_path("configs/experiments/rsa-backward-dgx-a100.json");
  const auto sweep_a100 = run_spsim("compare " + sweep_cfg + " --csv /dev/stdout");
  const auto sweep_h100 = run_spsim("compare " + sweep_cfg + " --csv /dev/stdout --cluster dgx-h100");
  REQUIRE(sweep_a100.code == 0);
  REQUIRE(sweep_h100.code == 0);
  CHECK(sweep_a100.out != sweep_h100.out);
  const auto missing = run_spsim("simulate " + cfg + " --cluster nowhere/cluster.json");
  CHECK(missing.code == 2);
  CHECK(missing.out.find("--cluster") != std::string::npos);
  CHECK(missing.out.find("nowhere/cluster.json") != std::string::npos);
  const auto unknown = run_spsim("simulate " + cfg + " --cluster dgx-z100");
  CHECK(unknown.code == 2);
  CHECK(unknown.out.find("dgx-h100") != std::string::npos);  // lists the valid presets
}

TEST_CASE("spsim simulate: simulation.attention_kernel picks the kernel family, or exits 2 naming it") {
  const auto dir = spsim_test::temp_dir("attention-kernel-cli");
  const std::string base = R"({ "schema_version": 1, "model": { "preset": "llama3-8b" },
    "workload": { "seq_len": 32768, "scope": "attention", "causal": true },
    "strategy": { "name": "ring", "degree": 8, "options": { "layout": "zigzag" } },
    "cluster": { "preset": "PRESET" }, "simulation": { "attention_kernel": "KERNEL" } })";
  const auto run = [&](const std::string& preset, const std::string& kernel) {
    std::string text = base;
    text.replace(text.find("PRESET"), 6, preset);
    text.replace(text.find("KERNEL"), 6, kernel);
    const auto path = spsim_test::write_file(dir / (preset + "-" + kernel + ".json"), text);
    return run_spsim("simulate " + path.string());
  };
  const auto fa2 = run("dgx-h100", "fa2"), fa3 = run("dgx-h100", "fa3");
  REQUIRE(fa2.code == 0);
  REQUIRE(fa3.code == 0);
  CHECK(fa2.out.find("attention kernel fa2") != std::string::npos);
  CHECK(fa3.out.find("attention kernel fa3") != std::string::npos);
  CHECK(fa2.out != fa3.out);
  const auto no_fa3 = run("dgx-a100", "fa3");  // FlashAttention-3 needs Hopper: no A100 parameters
  CHECK(no_fa3.code == 2);
  CHECK(no_fa3.out.find("simulation.attention_kernel") != std::string::npos);
  CHECK(no_fa3.out.find("it has: fa2") != std::string::npos);
  const auto unknown = run("dgx-h100", "fa9");
  CHECK(unknown.code == 2);
  CHECK(unknown.out.find("simulation.attention_kernel") != std::string::npos);
  CHECK(unknown.out.find("cudnn") != std::string::npos);  // lists the families
}
