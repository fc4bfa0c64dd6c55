// End-to-end tests of what a new user hits first: shapes too large for the machine, mistyped
// subcommands and options, and the memory limit option. Each must end at once with exit 2 and one
// `spsim: error:` line naming the key or argument.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "analysis/run/backend.hpp"
#include "tests/cli/run_cli.hpp"

using namespace spsim_test;

namespace {

std::string write_config(const std::string& name, const std::string& text) {
  const auto path = temp_dir("reliability") / name;
  std::ofstream(path) << text;
  return path.string();
}

struct Timed {
  CliResult r;
  double seconds = 0;
};

Timed timed(const std::string& args) {
  const auto t0 = std::chrono::steady_clock::now();
  Timed t{run_spsim(args), 0};
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("check of one llama3-70b layer at 1M tokens is refused at once with its memory estimate") {
  const auto cfg = write_config("l70b-1m.json", R"({"schema_version": 1, "model": {"preset": "llama3-70b"},
    "workload": {"seq_len": 1048576, "scope": "layer", "causal": true},
    "strategy": {"name": "ring", "degree": 8, "options": {"layout": "zigzag"}}})");
  const auto t = timed("check " + cfg);
  CAPTURE(t.r.out);
  CHECK(t.r.code == 2);
  CHECK(t.seconds < 5);
  CHECK(t.r.out.rfind("spsim: error: workload: check needs about ", 0) == 0);
  for (const char* part :
       {"workload.seq_len = 1048576", "model.hidden = 8192", "available", "--max-memory", "spsim simulate"})
    CHECK(has(t.r.out, part));
}

TEST_CASE("a hidden size of 2^31 is refused before anything is allocated") {
  const auto cfg = write_config("huge-hidden.json", R"({"schema_version": 1,
    "model": {"hidden": 2147483648, "heads": 4, "head_dim": 8},
    "workload": {"seq_len": 32, "scope": "layer"}, "strategy": {"name": "rsa", "degree": 2}})");
  const auto t = timed("check " + cfg);
  CAPTURE(t.r.out);
  CHECK(t.r.code == 2);
  CHECK(t.seconds < 5);
  CHECK(has(t.r.out, "model.hidden 2147483648"));
}

TEST_CASE("a mistyped subcommand or option names what was typed, the valid ones and the nearest") {
  auto r = run_spsim("simulatee x");
  CHECK(r.code == 2);
  CHECK(has(r.out, "spsim: error: unknown subcommand 'simulatee'; valid subcommands: calibrate, check,"));
  CHECK(has(r.out, "(did you mean 'simulate'?)"));
  r = run_spsim("simulate " + source_path("configs/experiments/rsa-ring-dgx-a100.json") + " --jsno");
  CHECK(r.code == 2);
  CHECK(has(r.out, "simulate: unknown option '--jsno'; valid options: "));
  CHECK(has(r.out, "(did you mean '--json'?)"));
  r = run_spsim("");
  CHECK(r.code == 2);
  CHECK(has(r.out, "a subcommand is required; valid subcommands:"));
  r = run_spsim("compare " + source_path("configs/experiments/rsa-compare.json") + " --jobs abc");
  CHECK(r.code == 2);
  CHECK(r.out.rfind("spsim: error: compare: ", 0) == 0);
  CHECK(has(r.out, "--jobs"));
}

TEST_CASE("--max-memory: a limit below the estimate refuses, a bad size names the option") {
  const std::string check = "check " + source_path("configs/checks/rsa-colossalai.json");
  auto r = run_spsim(check + " --max-memory 1K");
  CHECK(r.code == 2);
  CHECK(has(r.out, "more than the 1.00 KiB available (--max-memory"));
  CHECK(run_spsim(check + " --max-memory 4G").code == 1);  // runs: ColossalAI's ÷P fails the check
  r = run_spsim(check + " --max-memory lots");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--max-memory: 'lots' is not a size"));
  r = run_spsim("simulate " + source_path("configs/experiments/rsa-ring-dgx-a100.json") + " --max-memory 1K");
  CHECK(r.code == 2);
  CHECK(has(r.out, "spsim: error: strategy.degree: simulating 8 ranks holds at least "));
  CHECK(has(r.out, "--max-memory sets the limit"));
}

TEST_CASE("simulate holds nothing per token: a billion-token ring step is not refused, four times a half") {
  // Positions are runs and masks closed forms, so a limit of 64 MiB (2^30 tokens are 1 GiB at a byte
  // each) refuses nothing; the guard this replaced asked 32 bytes a token. Attention compute grows
  // with the square of the sequence, and at 2^29 tokens on 8 GPUs the ring's transfers hide behind
  // it: doubling the sequence multiplies the step time by 4.
  const auto step_time = [](std::int64_t seq_len) {
    const auto cfg = write_config("billion-" + std::to_string(seq_len) + ".json",
                                  R"({"schema_version": 1, "model": {"preset": "llama3-8b"},
      "workload": {"seq_len": )" + std::to_string(seq_len) +
                                      R"(, "causal": true, "scope": "attention", "passes": "fwd+bwd"},
      "cluster": {"preset": "dgx-h100", "nodes": 1},
      "strategy": {"name": "ring", "degree": 8, "options": {"layout": "zigzag"}}})");
    const auto r = run_spsim("simulate " + cfg + " --json --max-memory 64M");
    CAPTURE(r.out);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out).at("step_time_s").get<double>();
  };
  const double full = step_time(std::int64_t{1} << 30);
  const double half = step_time(std::int64_t{1} << 29);
  CHECK(full / half == doctest::Approx(4.0).epsilon(0.01).scale(0));  // within 1% of 4
}

TEST_CASE("check and run refuse a sweep; numbers too large for a double and deep nesting are bad input") {
  auto r = run_spsim("check " + source_path("configs/experiments/rsa-compare.json"));
  CHECK(r.code == 2);
  CHECK(has(r.out, "spsim: error: sweep: check runs one configuration"));
  r = run_spsim("check " + write_config("overflow.json", R"({"schema_version": 1e400})"));
  CHECK(r.code == 2);
  CHECK(has(r.out, "number overflow"));
  r = run_spsim("check " + write_config("deep.json", std::string(100000, '[') + std::string(100000, ']')));
  CHECK(r.code == 2);
  CHECK(has(r.out, "nested deeper than 64"));
}

TEST_CASE("the value of an option is not mistaken for an unknown option") {
  // --nodes -1 is a value; what is wrong is the missing --max-bytes.
  const auto r = run_spsim("collective --cluster dgx-h100 --op all_reduce --min-bytes 1M --nodes -1");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--max-bytes is required"));
  CHECK_FALSE(has(r.out, "unknown option"));
}

TEST_CASE("--backend nccl loads the CUDA backend module; a missing module names the file and the remedy") {
  if (!spsim::analysis::built_with_cuda()) {
    // Without the backend the device is refused before any loading (tests/analysis/run covers it).
    const auto r = run_spsim("run " + source_path("configs/runs/attention-llama3-8b-8k-gpu.json") + " --backend nccl");
    CHECK(r.code == 2);
    CHECK(has(r.out, "--device"));
    return;
  }
  // The module is loaded with every symbol bound (RTLD_NOW), so reaching CUDA's own verdict (no GPU on
  // this machine) or a run (a GPU) shows the binary exports what the module needs.
  const auto r = run_spsim("run " + source_path("configs/runs/attention-llama3-8b-8k-gpu.json") +
                           " --backend nccl --iters 1 --warmup 0");
  CHECK_MESSAGE((r.code == 0 || (r.code == 3 && has(r.out, "no CUDA device is visible"))), r.out);
  CHECK_FALSE(has(r.out, "could not be loaded"));

  const auto missing = run_shell("SPSIM_CUDA_BACKEND=/nonexistent/libspsim_cuda.so " + std::string(SPSIM_BINARY) +
                                 " run " + source_path("configs/runs/attention-llama3-8b-8k-gpu.json") +
                                 " --backend nccl");
  CHECK(missing.code == 2);
  CHECK(has(missing.out, "spsim: error: --device: the CUDA backend module could not be loaded from "
                         "/nonexistent/libspsim_cuda.so"));
  CHECK(has(missing.out, "SPSIM_CUDA_BACKEND"));
}
