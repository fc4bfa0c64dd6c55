// The host memory estimate of `check` and `run` (analysis/check/memory_estimate.hpp) against its terms
// written out by hand.
#include "analysis/check/memory_estimate.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"

using spsim::analysis::Json;

namespace {

spsim::analysis::Config attention(std::int64_t seq, int degree) {
  // B = 2, H = 4, Hkv = 2, d = 8.
  return spsim::analysis::parse_config(Json::parse(R"({"schema_version": 1,
      "model": {"hidden": 32, "heads": 4, "kv_heads": 2},
      "workload": {"seq_len": )" + std::to_string(seq) +
                                                   R"(, "batch": 2},
      "strategy": {"name": "ring", "degree": )" + std::to_string(degree) +
                                                   "}}"),
                                       "");
}

const spsim::rt::MemoryLimit plenty{1e15, "test"};

}  // namespace

TEST_CASE("attention scope: inputs, reference and results by hand; the ranks hold at least their shards") {
  const std::int64_t s = 1024, b = 2, h = 4, hkv = 2, d = 8;
  const auto e = spsim::analysis::check_memory_estimate(attention(s, 4), plenty);
  // A = (2·B·H + 2·B·Hkv)·s·d elements: q and dO, k and v (or O, dQ, dK, dV), float64.
  const double a = static_cast<double>((2 * b * h + 2 * b * hkv) * s * d);
  const double workers = std::min<double>(b * hkv, std::max(1u, std::thread::hardware_concurrency()));
  CHECK(e.inputs == doctest::Approx(2 * a * 8));
  CHECK(e.results == doctest::Approx(2 * a * 8));
  CHECK(e.reference == doctest::Approx((2 * a + workers * 2.0 * s * s) * 8));
  // Each of the 4 ranks holds at least its s/4 rows of q, k, v and dO in float64 (check's dtype).
  CHECK(e.ranks >= 4 * (a / 4) * 8);
  CHECK(e.ranks_count == 4);
}

TEST_CASE("the refusal names the estimate, the limit and the keys; within the limit nothing is thrown") {
  const auto cfg = attention(1024, 4);
  const auto e = spsim::analysis::check_memory_estimate(cfg, plenty);
  CHECK_NOTHROW(spsim::analysis::require_host_memory(e, {e.total() * 1.01, "test"}, cfg, "check"));
  try {
    spsim::analysis::require_host_memory(e, {e.total() / 2, "the test's limit"}, cfg, "check");
    FAIL("expected an InputError");
  } catch (const spsim::InputError& err) {
    CHECK(err.where() == "workload");
    const std::string m = err.message();
    CHECK(m.find("the test's limit") != std::string::npos);
    CHECK(m.find("workload.seq_len = 1024") != std::string::npos);
    CHECK(m.find("strategy.degree = 4") != std::string::npos);
  }
}

TEST_CASE("run counts every process's copy of the inputs, and the reference only with --verify") {
  const auto cfg = attention(512, 2);
  const auto check = spsim::analysis::check_memory_estimate(cfg, plenty);
  const auto run =
      spsim::analysis::run_memory_estimate(cfg, 2, 2, spsim::rt::DType::f64, false, true, plenty);
  const auto verify =
      spsim::analysis::run_memory_estimate(cfg, 2, 2, spsim::rt::DType::f64, true, true, plenty);
  const auto gpu =
      spsim::analysis::run_memory_estimate(cfg, 2, 2, spsim::rt::DType::f64, false, false, plenty);
  const auto half =
      spsim::analysis::run_memory_estimate(cfg, 2, 1, spsim::rt::DType::f64, false, true, plenty);
  CHECK(run.inputs == doctest::Approx(2 * check.inputs / 2));  // each of 2 processes generates them once
  CHECK(run.reference == 0);
  CHECK(verify.reference == doctest::Approx(check.reference));
  CHECK(verify.results == doctest::Approx(2 * check.results));  // gathered on every process
  CHECK(run.ranks > 0);
  CHECK(gpu.ranks == 0);                                  // a GPU's tensors are not host memory
  CHECK(half.inputs == doctest::Approx(run.inputs / 2));  // one of the two processes on this node
  CHECK(half.ranks == doctest::Approx(run.ranks / 2));
}
