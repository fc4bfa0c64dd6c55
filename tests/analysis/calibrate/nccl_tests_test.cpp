// nccl-tests parsing and per-collective fits, on tables written here in nccl-tests' text format with
// times from the closed form  time = α + size · f_K(P) / busbw  (so the fit must give α and busbw back).
#include "analysis/calibrate/nccl_tests.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"

using namespace spsim::analysis;
using spsim::rt::CommKind;

namespace {

struct Truth {
  double alpha_us;
  double busbw_GBps;
  double factor;  // f_K(P): 2(P-1)/P all-reduce, (P-1)/P RS/AG/A2A, 1 sendrecv
};

// "#  Rank  i Group  0 Pid  4242 on   node01 device  i [0x..] NVIDIA H100 80GB HBM3" for i < ranks.
std::string rank_lines(int ranks, const std::string& prefix = "") {
  std::string out;
  char buf[160];
  for (int i = 0; i < ranks; ++i) {
    std::snprintf(buf, sizeof buf,
                  "%s#  Rank %2d Group  0 Pid  %5d on     node01 device %2d [0x%02x] NVIDIA H100 80GB HBM3\n",
                  prefix.c_str(), i, 4242 + i, i % 8, 0x1b + i);
    out += buf;
  }
  return out;
}

// Rows from 8 B to 1 GiB (×2), out-of-place then in-place (the in-place time 1% slower), as nccl-tests
// prints them: size, count (float elements), type, [redop], [root], then per placement time (µs, two
// decimals), algbw and busbw (GB/s, two decimals) and #wrong.
std::string rows(const Truth& t, const char* redop, bool with_root, const std::string& prefix = "",
                 bool error_column = false) {
  std::string out;
  char buf[256];
  for (double size = 8; size <= 1 << 30; size *= 2) {
    const double time = t.alpha_us + size * t.factor / (t.busbw_GBps * 1e3);  // µs (GB/s = 1e3 B/µs)
    const double algbw = size / time / 1e3, busbw = algbw * t.factor;
    const double time_in = time * 1.01, algbw_in = size / time_in / 1e3, busbw_in = algbw_in * t.factor;
    std::string head;
    std::snprintf(buf, sizeof buf, "%s%12.0f  %12.0f  %8s", prefix.c_str(), size, size / 4, "float");
    head = buf;
    if (redop) head += std::string("  ") + std::string(6 - std::string(redop).size(), ' ') + redop;
    if (with_root) head += "      -1";
    if (error_column)
      std::snprintf(buf, sizeof buf, "  %7.2f  %6.2f  %6.2f  %5.0e  %7.2f  %6.2f  %6.2f  %5.0e\n", time,
                    algbw, busbw, 0.0, time_in, algbw_in, busbw_in, 0.0);
    else
      std::snprintf(buf, sizeof buf, "  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n", time, algbw,
                    busbw, 0, time_in, algbw_in, busbw_in, 0);
    out += head + buf;
  }
  return out;
}

const std::string kHeader =
    "#\n"
    "#                                                              out-of-place                       "
    "in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
    "busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
    "(GB/s)       \n";

const std::string kFooter = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 57.1234 \n#\n";

std::string preamble(const std::string& test, int gpus) {
  return "# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105\n# Collective test starting: " +
         test + "\n# nThread 1 nGpus " + std::to_string(gpus) +
         " minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
         "1 "
         "graph: 0\n#\n# Using devices\n";
}

void check_fit(const NcclTestsTable& table, const Truth& t) {
  const auto fit = fit_nccl_tests(table);
  // Printed times carry two decimals (±0.005 µs on a time of at least α): α within 0.1%, busbw within
  // 0.01% (the large rows, where rounding is negligible, decide it).
  CHECK(fit.latency_s * 1e6 == doctest::Approx(t.alpha_us).epsilon(1e-3));
  CHECK(fit.busbw_Bps / 1e9 == doctest::Approx(t.busbw_GBps).epsilon(1e-4));
  CHECK(fit.line.residual < 1e-3);
}

}  // namespace

TEST_CASE("all_reduce_perf, current format with the test line and one Rank line per GPU") {
  const Truth t{25.0, 150.0, 2.0 * 7 / 8};
  const std::string text =
      preamble("all_reduce_perf", 8) + rank_lines(8) + kHeader + rows(t, "sum", true) + kFooter;
  const auto table = parse_nccl_tests(text, "ar.txt");
  CHECK(table.test == "all_reduce_perf");
  CHECK(table.kind == CommKind::all_reduce);
  CHECK(table.ranks == 8);
  REQUIRE(table.rows.size() == 28);  // 8 B .. 1 GiB: 2^3 .. 2^30
  CHECK(table.rows.front().size_bytes == 8);
  CHECK(table.rows.front().count == 2);
  CHECK(table.rows.front().type == "float");
  CHECK(table.rows.back().size_bytes == 1073741824.0);
  CHECK(table.rows.back().in_place_time_us > table.rows.back().time_us);
  check_fit(table, t);
}

TEST_CASE("all_gather_perf named by its file, ranks recovered from busbw / algbw") {
  // No test line and no Rank lines: P from busbw/algbw = (P-1)/P = 0.75 -> P = 4.
  const Truth t{12.0, 80.0, 3.0 / 4};
  const std::string text = "# nThread 1 nGpus 4 minBytes 8 maxBytes 1073741824 step: 2(factor)\n" + kHeader +
                           rows(t, "none", true) + kFooter;
  const auto table = parse_nccl_tests(text, "/data/run3/all_gather_perf.log");
  CHECK(table.kind == CommKind::all_gather);
  CHECK(table.ranks == 4);
  check_fit(table, t);
}

TEST_CASE("alltoall_perf launched by mpirun with [1,0]<stdout>: prefixes") {
  const std::string p = "[1,0]<stdout>:";
  const Truth t{40.0, 45.0, 15.0 / 16};
  std::string header;
  for (std::size_t at = 0, next; at < kHeader.size(); at = next + 1) {
    next = kHeader.find('\n', at);
    header += p + kHeader.substr(at, next - at + 1);
  }
  const std::string text = p + "# Collective test starting: alltoall_perf\n" + rank_lines(16, p) + header +
                           "node01:123:456 [0] NCCL INFO comm 0x55 rank 0 nranks 16 - Init COMPLETE\n" +
                           rows(t, "none", true, p);
  const auto table = parse_nccl_tests(text, "a2a.txt");
  CHECK(table.kind == CommKind::all_to_all);
  CHECK(table.ranks == 16);
  check_fit(table, t);
}

TEST_CASE("reduce_scatter_perf in the older layout: no root column, an error column") {
  const Truth t{18.0, 120.0, 7.0 / 8};
  const std::string header =
      "#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  "
      "error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  const std::string text = rank_lines(8) + header + rows(t, "sum", false, "", true);
  const auto table = parse_nccl_tests(text, "logs/reduce_scatter_perf_8gpu.txt");
  CHECK(table.kind == CommKind::reduce_scatter);
  CHECK(table.ranks == 8);
  check_fit(table, t);
}

TEST_CASE("sendrecv_perf: busbw = algbw, ranks from the Rank lines") {
  const Truth t{9.0, 22.0, 1.0};
  const std::string text =
      preamble("sendrecv_perf", 2) + rank_lines(2) + kHeader + rows(t, "sum", true) + kFooter;
  const auto table = parse_nccl_tests(text, "sr.txt");
  CHECK(table.kind == CommKind::sendrecv);
  CHECK(table.ranks == 2);
  check_fit(table, t);
}

TEST_CASE("nccl_tests_cluster_text: the cluster's override section, one entry per kind") {
  const Truth t{25.0, 150.0, 2.0 * 7 / 8};
  const auto ar = fit_nccl_tests(parse_nccl_tests(
      preamble("all_reduce_perf", 8) + rank_lines(8) + kHeader + rows(t, "sum", true), "ar.txt"));
  const auto doc = nlohmann::json::parse(nccl_tests_cluster_text({ar}, ""));
  CHECK_FALSE(doc.contains("preset"));
  const auto& j = doc.at("collective_fits");
  REQUIRE(j.contains("all_reduce"));
  CHECK(j["all_reduce"]["latency_us"].get<double>() == doctest::Approx(25.0).epsilon(1e-3));
  CHECK(j["all_reduce"]["busbw_GBps"].get<double>() == doctest::Approx(150.0).epsilon(1e-4));
  CHECK(j["all_reduce"]["ranks"].get<int>() == 8);
  CHECK_THROWS_AS((void)nccl_tests_cluster_text({ar, ar}, ""), spsim::InputError);
  // With a preset, the fits land in a cluster the simulator reads: the preset's GPU and the fit.
  const auto cluster = spsim::analysis::parse_cluster_text(nccl_tests_cluster_text({ar}, "dgx-h100"), "test");
  CHECK(cluster.name == "dgx-h100");
  REQUIRE(cluster.collective_fits[0].has_value());
  CHECK(cluster.collective_fits[0]->ranks == 8);
  CHECK_THROWS_AS((void)nccl_tests_cluster_text({ar}, "no-such-preset"), spsim::InputError);
}

TEST_CASE("bad nccl-tests files name the file, the line and the choices") {
  auto message = [](const std::string& text, const std::string& source) -> std::string {
    try {
      (void)parse_nccl_tests(text, source);
    } catch (const spsim::InputError& e) {
      CHECK(e.where() == source);
      return e.what();
    }
    return "";
  };
  const Truth t{25.0, 150.0, 1.75};
  CHECK(message("just some log\n", "x.txt").find("no nccl-tests table") != std::string::npos);
  CHECK(message(kHeader, "all_reduce_perf.txt").find("no rows") != std::string::npos);
  const std::string bcast =
      message(preamble("broadcast_perf", 8) + rank_lines(8) + kHeader + rows(t, "sum", true), "b.txt");
  CHECK(bcast.find("unsupported nccl-tests test 'broadcast_perf'") != std::string::npos);
  CHECK(bcast.find("alltoall_perf") != std::string::npos);
  CHECK(message(rank_lines(8) + kHeader + rows(t, "sum", true), "measurements.txt")
            .find("cannot tell which collective") != std::string::npos);
  // A truncated row: line 5 of the text is the first row (4 header lines before it).
  const std::string broken =
      kHeader + "           8             2     float     sum      -1    36.54    0.00\n";
  CHECK(message(broken, "all_reduce_perf.txt").find("line 5: expected 13 columns") != std::string::npos);
  const std::string nan_row = kHeader +
                              "           8             2     float     sum      -1    fast    0.00    0.00  "
                              "    0    35.40    0.00    0.00      0\n";
  CHECK(message(nan_row, "all_reduce_perf.txt").find("'fast' in column 'time' is not a number") !=
        std::string::npos);
  // sendrecv's busbw equals its algbw, so without Rank lines P cannot be recovered.
  CHECK(message(kHeader + rows(Truth{9, 22, 1}, "sum", true), "sendrecv_perf.txt").find("number of ranks") !=
        std::string::npos);
}
