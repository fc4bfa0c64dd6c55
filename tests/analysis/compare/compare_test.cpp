// run_compare with a stub simulator: row order, invalid points, baselines, determinism across --jobs,
// and the CSV / Markdown / JSON / plot writers.
#include "analysis/compare/compare.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "analysis/config/document.hpp"
#include "analysis/report/json.hpp"
#include "analysis/simulate/simulate.hpp"
#include "runtime/core/error.hpp"
#include "tests/support/helpers.hpp"

using namespace spsim::analysis;

namespace {

// rsa on a small model; the sweep: 4 grad_reduction variants × seq_len {64, 128, 130}: 130 is not
// divisible by the degree 4, so those 4 points are invalid.
Json sweep_doc() {
  return Json::parse(R"({
    "schema_version": 1, "name": "t",
    "model": {"hidden": 64, "heads": 4, "head_dim": 16},
    "workload": {"seq_len": 64},
    "cluster": {"preset": "dgx-a100"},
    "strategy": {"name": "rsa", "degree": 4},
    "sweep": {"strategy.options.grad_reduction": ["allreduce_slice_div", "allreduce_slice", "reduce_scatter", "ring"],
              "workload.seq_len": [64, 128, 130]}
  })");
}

// A stand-in for simulate(): a pure function of the point, so any schedule of workers must give the
// same rows. step = seq_len µs × (1 + position of the variant in the list above).
SimSummary stub(const Config& c) {
  const std::string v = c.strategy.options.at("grad_reduction");
  const double k = v == "allreduce_slice_div" ? 1
                   : v == "allreduce_slice"   ? 2
                   : v == "reduce_scatter"    ? 3
                                              : 4;
  SimSummary s;
  s.step_time_s = static_cast<double>(c.workload.seq_len) * 1e-6 * k;
  s.compute_s = s.step_time_s / 2;
  s.exposed_comm_s = s.step_time_s / 4;
  s.bytes_sent_max = 1000 * k;
  s.peak_memory_bytes = 1 << 20;
  s.gpu_memory_bytes = 80ull << 30;
  return s;
}

CompareResult compare(int jobs, std::optional<std::size_t> baseline = std::nullopt) {
  CompareOptions o;
  o.jobs = jobs;
  o.baseline = baseline;
  o.simulate = stub;
  return run_compare(parse_config(sweep_doc(), ""), o);
}

}  // namespace

TEST_CASE("compare: one row per point in sweep order, invalid points keep their reason") {
  const auto r = compare(1);
  REQUIRE(r.rows.size() == 12);  // 4 variants × 3 lengths
  CHECK(r.axes == std::vector<std::string>{"strategy.options.grad_reduction", "workload.seq_len"});
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    CAPTURE(i);
    const auto& row = r.rows[i];
    // Row-major: the last axis turns fastest.
    CHECK(*row.values[1].number == std::vector<int>{64, 128, 130}[i % 3]);
    if (i % 3 == 2) {
      CHECK_FALSE(row.ok());
      CHECK(row.error.find("not divisible by the degree 4") != std::string::npos);
    } else {
      REQUIRE(row.ok());
      CHECK(row.closed.has_value());  // rsa attention has a closed form
      CHECK(row.memory.has_value());
    }
  }
  const Table t = compare_table(r);
  CHECK(t.rows().size() == 12);
  CHECK(t.rows()[2].back().find("not divisible") != std::string::npos);
}

TEST_CASE("compare: speedup is the baseline's step over the row's") {
  // Default baseline: row 1 (allreduce_slice_div, 64): 64 µs. Row 4 (allreduce_slice, 64) = 128 µs.
  const auto first = compare(1);
  REQUIRE(first.baseline == 0u);
  CHECK(*first.speedup(0) == doctest::Approx(1.0));
  CHECK(*first.speedup(3) == doctest::Approx(64.0 / 128.0));
  CHECK_FALSE(first.speedup(2).has_value());  // invalid row
  // --baseline 10 (0-based 9: ring, 64 → 4 × 64 µs = 256 µs): row 1 is 256/64 = 4× faster.
  const auto named = compare(1, 9);
  CHECK(*named.speedup(0) == doctest::Approx(4.0));
  CHECK(compare_table(named).rows()[9].back().rfind("baseline", 0) == 0);  // the note column
}

TEST_CASE("compare: a baseline row that does not exist or has no result is an InputError") {
  auto where = [](std::size_t row) -> std::string {
    try {
      (void)compare(1, row);
    } catch (const spsim::InputError& e) {
      return e.where();
    }
    return "";
  };
  CHECK(where(12) == "--baseline");
  CHECK(where(2) == "--baseline");  // seq 130: invalid
}

TEST_CASE("compare: --jobs does not change the result") {
  const std::string one = compare_json(compare(1));
  for (int jobs : {2, 3, 8, 64}) {
    CAPTURE(jobs);
    CHECK(compare_json(compare(jobs)) == one);
  }
}

TEST_CASE("compare: progress is reported once per point, ending at the total") {
  std::vector<std::size_t> seen;
  CompareOptions o;
  o.jobs = 3;
  o.simulate = stub;
  o.progress = [&](std::size_t done, std::size_t total) {
    CHECK(total == 12);
    seen.push_back(done);
  };
  (void)run_compare(parse_config(sweep_doc(), ""), o);
  REQUIRE(seen.size() == 12);
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i + 1);
}

TEST_CASE("compare: an InputError from the simulator becomes the row's reason; others propagate") {
  CompareOptions o;
  o.simulate = [](const Config& c) -> SimSummary {
    if (c.workload.seq_len == 128) throw spsim::InputError("strategy.degree", "too big for the cluster");
    return stub(c);
  };
  const auto r = run_compare(parse_config(sweep_doc(), ""), o);
  CHECK(r.rows[1].error.find("too big for the cluster") != std::string::npos);
  CHECK(r.rows[0].ok());
  o.simulate = [](const Config&) -> SimSummary { throw std::logic_error("bug"); };
  o.jobs = 4;
  CHECK_THROWS_AS((void)run_compare(parse_config(sweep_doc(), ""), o), std::logic_error);
}

TEST_CASE("compare: JSON rows carry the documented keys") {
  const Json j = Json::parse(compare_json(compare(2)));
  CHECK(j.at("schema_version") == 1);
  CHECK(j.at("baseline_row") == 1);
  REQUIRE(j.at("rows").size() == 12);
  const Json& row = j.at("rows")[3];
  CHECK(row.at("values").at("strategy.options.grad_reduction") == "allreduce_slice");
  CHECK(row.at("step_time_s").get<double>() == doctest::Approx(128e-6));
  for (const char* key : {"compute_s", "exposed_comm_s", "bytes_sent", "peak_memory_bytes", "oom",
                          "memory_model_bytes", "closed_form_s", "sim_over_closed_form", "speedup"})
    CHECK(row.contains(key));
  CHECK(j.at("rows")[2].at("ok") == false);
  CHECK(j.at("rows")[2].contains("error"));
}

TEST_CASE("compare: CSV and Markdown have a header and one line per row") {
  const Table t = compare_table(compare(1));
  auto lines = [](const std::string& s) {
    std::size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
  };
  CHECK(lines(t.to_csv()) == 13);       // header + 12
  CHECK(lines(t.to_markdown()) == 14);  // header + rule + 12
  CHECK(t.to_csv().rfind("#,grad_reduction,seq_len,step,", 0) == 0);
}

namespace {

using spsim::test::slurp;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("compare plot: seq_len on x, one series per variant, in a valid SVG") {
  const auto r = compare(1);
  const LinePlot plot = compare_plot(r);
  CHECK(plot.x_label == "workload.seq_len");
  CHECK(plot.log_x);  // the plotted values 64 and 128 are powers of two (130 only in invalid rows)
  REQUIRE(plot.series.size() == 4);
  CHECK(plot.series[0].name == "grad_reduction=allreduce_slice_div");
  CHECK(plot.series[3].points == std::vector<std::pair<double, double>>{{64, 0.256}, {128, 0.512}});
  spsim::test::TempDir dir;
  const auto svg = dir.path() / "p.svg";
  write_line_plot(plot, svg);
  const std::string text = slurp(svg);
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("</svg>") != std::string::npos);
  // gnuplot's SVG terminal wraps each plotted series in <g id="gnuplot_plot_N..."> (N from 1).
  CHECK(count(text, "id=\"gnuplot_plot_") == 4);
  for (const char* v : {"allreduce_slice_div", "reduce_scatter", "=ring"})
    CHECK(text.find(v) != std::string::npos);
}

TEST_CASE("plots: PNG of the documented size; a bad extension is an InputError") {
  spsim::test::TempDir dir;
  LinePlot plot{"t", "x", "y", false, false, {{"a", {{1, 1}, {2, 4}}}}};
  const auto png = dir.path() / "p.png";
  write_line_plot(plot, png);
  const std::string bytes = slurp(png);
  REQUIRE(bytes.size() > 24);
  CHECK(bytes.substr(1, 3) == "PNG");
  // IHDR: width and height are big-endian 32-bit integers at offsets 16 and 20.
  auto be32 = [&](std::size_t o) {
    return (static_cast<unsigned char>(bytes[o]) << 24) | (static_cast<unsigned char>(bytes[o + 1]) << 16) |
           (static_cast<unsigned char>(bytes[o + 2]) << 8) | static_cast<unsigned char>(bytes[o + 3]);
  };
  CHECK(be32(16) == plot_width);
  CHECK(be32(20) == plot_height);
  CHECK_THROWS_AS(write_line_plot(plot, dir.path() / "p.pdf"), spsim::InputError);
}

TEST_CASE("gantt: bars from the simulated timeline; one compute and one comm series in the SVG") {
  // RSA on 2 GPUs of a DGX A100: both ranks compute and pass K/V, so both streams have bars.
  const Json doc = Json::parse(R"({"schema_version": 1, "model": {"hidden": 64, "heads": 4},
    "workload": {"seq_len": 256}, "cluster": {"preset": "dgx-a100"},
    "strategy": {"name": "rsa", "degree": 2}})");
  std::vector<GanttBar> bars;
  SimulateOptions options;
  options.bars = &bars;
  const auto summary = simulate(parse_config(doc, ""), options);
  REQUIRE_FALSE(bars.empty());
  double last_end = 0;
  bool compute = false, comm = false;
  for (const auto& b : bars) {
    CHECK(b.rank >= 0);
    CHECK(b.rank < 2);
    CHECK(b.start_s <= b.end_s);
    last_end = std::max(last_end, b.end_s);
    compute = compute || !b.comm;
    comm = comm || b.comm;
  }
  CHECK(compute);
  CHECK(comm);
  CHECK(last_end == summary.step_time_s);  // the step ends with the last op of the slowest rank
  spsim::test::TempDir dir;
  write_gantt(bars, "step", dir.path() / "g.svg");
  CHECK(count(slurp(dir.path() / "g.svg"), "id=\"gnuplot_plot_") == 2);
}
