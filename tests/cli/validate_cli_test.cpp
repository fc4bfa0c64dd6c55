// spsim validate end to end: the committed groups pass, a group that misses its tolerance exits 1,
// bad input exits 2 naming the file and the JSON path.
#include <doctest/doctest.h>

#include "tests/cli/run_cli.hpp"

using spsim_test::run_spsim;

namespace {

// One FA2 forward row on A100 at `measured` TFLOP/s, held to `tolerance`.
std::string group(double measured, double tolerance, const std::string& extra_row_field = "") {
  return R"({ "group": "g", "description": "d", "kind": "attention_kernel", "source": "test",
    "tolerance_mape": )" +
         std::to_string(tolerance) + R"(, "min_seq_len": 1024,
    "rows": [ { "id": "r1", "use": "validation", "measured": )" +
         std::to_string(measured) +
         R"(, "unit": "TFLOP/s", "gpu": "a100-sxm4-80gb", "kernel": "fa2", "pass": "fwd", "causal": false,
      "batch": 2, "heads": 16, "seq_len": 8192, "head_dim": 128, "dtype": "bf16" )" +
         extra_row_field + " } ] }";
}

}  // namespace

TEST_CASE("spsim validate: the committed groups are within their tolerances") {
  const auto r = run_spsim("validate");
  CHECK(r.code == 0);
  CHECK(r.out.find("all groups within tolerance") != std::string::npos);
  CHECK(r.out.find("ring-flash-attention-h800") != std::string::npos);
  CHECK(r.out.find("ring-flash-attention-a100") != std::string::npos);
}

TEST_CASE("spsim validate: a group off its tolerance exits 1 and says by how much") {
  const auto dir = spsim_test::temp_dir("validate-cli");
  // The model predicts over 200 TFLOP/s for this row (README, head-dimension table): 100 is far off.
  spsim_test::write_file(dir / "g.json", group(100, 0.08));
  const auto off = run_spsim("validate --dir " + dir.string());
  CHECK(off.code == 1);
  CHECK(off.out.find("FAIL: validation MAPE") != std::string::npos);
  spsim_test::write_file(dir / "g.json", group(100, 2.0));  // within a 200% tolerance
  CHECK(run_spsim("validate --dir " + dir.string()).code == 0);
}

TEST_CASE("spsim validate: bad input exits 2 naming the file and the key") {
  const auto dir = spsim_test::temp_dir("validate-cli-bad");
  spsim_test::write_file(dir / "g.json", group(100, 0.08, R"(, "kernel": "fa3")"));  // no fa3 on A100
  const auto no_fa3 = run_spsim("validate --dir " + dir.string());
  CHECK(no_fa3.code == 2);
  CHECK(no_fa3.out.find("row r1.kernel") != std::string::npos);
  spsim_test::write_file(dir / "g.json", group(100, 0.08, R"(, "pass": "sideways")"));
  const auto pass = run_spsim("validate --dir " + dir.string());
  CHECK(pass.code == 2);
  CHECK(pass.out.find("rows[0].pass") != std::string::npos);
  CHECK(pass.out.find("fwd, bwd, fwd+bwd") != std::string::npos);
  spsim_test::write_file(dir / "g.json", group(100, 0.08, R"(, "kv_head": 8)"));  // a misspelt key
  const auto typo = run_spsim("validate --dir " + dir.string());
  CHECK(typo.code == 2);
  CHECK(typo.out.find("kv_head") != std::string::npos);
  spsim_test::write_file(dir / "g.json", "{ not json");
  const auto bad = run_spsim("validate --dir " + dir.string());
  CHECK(bad.code == 2);
  CHECK(bad.out.find("g.json") != std::string::npos);
  CHECK(run_spsim("validate --group nonesuch").code == 2);
}

namespace {

// One nccl-tests row: all_reduce of 1 GiB on 8xA100 (ring), busbw `measured` GB/s.
std::string collective_group(double measured, const std::string& extra_row_field = "") {
  return R"({ "group": "c", "description": "d", "kind": "collective", "source": "test", "tolerance_mape": 0.05,
    "rows": [ { "id": "c1", "use": "validation", "measured": )" +
         std::to_string(measured) +
         R"(, "unit": "GB/s", "cluster": { "preset": "dgx-a100" }, "op": "all_reduce", "bytes": 1073741824,
      "algo": "ring" )" +
         extra_row_field + " } ] }";
}

}  // namespace

TEST_CASE("spsim validate: collective rows run spsim collective's code; bad ones exit 2 naming the key") {
  const auto dir = spsim_test::temp_dir("validate-cli-collective");
  // A ring all-reduce on NVLink3 cannot reach 1000 GB/s busbw (the link's line rate is 300 GB/s).
  spsim_test::write_file(dir / "c.json", collective_group(1000));
  const auto off = run_spsim("validate --dir " + dir.string());
  CHECK(off.code == 1);
  CHECK(off.out.find("c1") != std::string::npos);
  // The same row through `spsim collective`: validate predicts exactly what that command prints.
  const auto table = run_spsim(
      "collective --cluster dgx-a100 --op all_reduce --algo ring --min-bytes 1G "
      "--max-bytes 1G --json");
  REQUIRE(table.code == 0);
  const auto at = table.out.find("\"busbw_GBps\": ");
  REQUIRE(at != std::string::npos);
  const double busbw = std::stod(table.out.substr(at + 14));
  spsim_test::write_file(dir / "c.json", collective_group(busbw));
  const auto exact = run_spsim("validate --dir " + dir.string());
  CHECK(exact.code == 0);
  CHECK(exact.out.find("0.0%") != std::string::npos);
  struct Bad {
    const char* field;
    const char* names;
  };
  for (const Bad& b :
       {Bad{R"(, "op": "allreduce")", "rows[0].op"},
        Bad{R"(, "cluster": { "preset": "dgx-z" })", "rows[0].cluster.preset"},
        Bad{R"(, "cluster": { "preset": "dgx-a100", "gpus_per_node": 16 })", "gpus_per_node"},
        Bad{R"(, "unit": "TFLOP/s")", "rows[0].unit"}, Bad{R"(, "algo": "nvls")", "rows[0] (algo)"},
        Bad{R"(, "protocol": "ll64")", "rows[0].protocol"}, Bad{R"(, "gpu": "b200")", "gpu"}}) {
    CAPTURE(b.field);
    spsim_test::write_file(dir / "c.json", collective_group(200, b.field));
    const auto r = run_spsim("validate --dir " + dir.string());
    CAPTURE(r.out);
    CHECK(r.code == 2);
    CHECK(r.out.find(b.names) != std::string::npos);
  }
}
