// End-to-end: `spsim compare`, `spsim gantt` and `spsim report` (outputs, exit codes, the committed
// report being up to date).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/run_cli.hpp"
#include "tests/support/helpers.hpp"

using namespace spsim_test;
using spsim::test::slurp;

namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

std::size_t lines(const std::string& s) {
  return count(s, "\n");
}

}  // namespace

TEST_CASE(
    "spsim compare: grad_reduction × seq_len × cluster.nodes × degree → table, CSV, JSON, Markdown, plot") {
  // configs/experiments/rsa-compare.json: 4 variants × 2 lengths × nodes {1, 4} × degree {8, 32} = 32
  // points; degree 32 on one 8-GPU node is impossible (8 rows with the reason).
  const auto dir = temp_dir("compare-cli");
  const auto r = run_spsim("compare " + source_path("configs/experiments/rsa-compare.json") + " --csv " +
                           (dir / "t.csv").string() + " --md " + (dir / "t.md").string() + " --plot " +
                           (dir / "t.svg").string() + " --jobs 2");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("32 points, 24 simulated") != std::string::npos);
  CHECK(count(r.out, "degree 32 is larger than the 8 GPUs") == 8);
  CHECK(lines(slurp(dir / "t.csv")) == 33);
  CHECK(lines(slurp(dir / "t.md")) == 34);
  // The plot: x = seq_len; one series per combination of the other axes that has results:
  // 4 variants × (nodes 1, degree 8), (nodes 4, degree 8), (nodes 4, degree 32) = 12.
  const std::string svg = slurp(dir / "t.svg");
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "id=\"gnuplot_plot_") == 12);
  for (const char* v : {"grad_reduction=allreduce_slice_div", "grad_reduction=allreduce_slice,",
                        "grad_reduction=reduce_scatter", "grad_reduction=ring"})
    CHECK(count(svg, v) >= 3);
  const auto j = run_spsim("compare --json " + source_path("configs/experiments/rsa-compare.json"));
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(j.out.rfind("{\n  \"schema_version\": 1", 0) == 0);
  CHECK(doc.at("rows").size() == 32);
  CHECK(doc.at("rows")[1].at("ok") == false);
}

TEST_CASE("spsim compare --baseline and a PNG plot") {
  const auto dir = temp_dir("compare-png");
  const auto r = run_spsim("compare " + source_path("configs/experiments/rsa-backward-dgx-a100.json") +
                           " --baseline 7 --plot " + (dir / "p.png").string());
  REQUIRE(r.code == 0);
  CHECK(r.out.find("baseline") != std::string::npos);
  const std::string png = slurp(dir / "p.png");
  REQUIRE(png.size() > 24);
  CHECK(png.substr(1, 3) == "PNG");
}

TEST_CASE("spsim compare: bad input exits 2 with the path and the valid choices") {
  const auto dir = temp_dir("compare-bad");
  auto with_sweep = [&](const std::string& name, const std::string& sweep,
                        const std::string& model = R"({"preset": "bert-large"})") {
    return write_file(dir / name, R"({"schema_version": 1, "model": )" + model +
                                      R"(, "workload": {"seq_len": 4096}, "cluster": {"preset": "dgx-a100"},
       "strategy": {"name": "rsa", "degree": 8}, "sweep": )" +
                                      sweep + "}")
        .string();
  };
  struct Case {
    const char* name;
    std::string args;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"unknown dotted path",
       with_sweep("a.json", R"({"workload.seqlen": [1]})"),
       {"sweep.workload.seqlen", "cannot be swept", "workload.seq_len", "strategy.options.grad_reduction"}},
      {"empty value list",
       with_sweep("b.json", R"({"workload.seq_len": []})"),
       {"sweep.workload.seq_len", "empty"}},
      {"type mismatch",
       with_sweep("c.json", R"({"workload.seq_len": ["long"]})"),
       {"sweep.workload.seq_len[0]"}},
      {"unreadable HF config",
       with_sweep("d.json", R"({"workload.seq_len": [4096]})", R"({"hf_config": "missing/config.json"})"),
       {"model.hf_config", "missing/config.json"}},
      {"every point invalid",
       with_sweep("e.json", R"({"workload.seq_len": [4097, 4099]})"),
       {"no point of the sweep"}},
      {"zero jobs", source_path("configs/experiments/rsa-backward-dgx-a100.json") + " --jobs 0", {"--jobs"}},
      {"baseline out of range",
       source_path("configs/experiments/rsa-backward-dgx-a100.json") + " --baseline 99",
       {"--baseline", "12 rows"}},
      {"plot extension",
       source_path("configs/experiments/rsa-backward-dgx-a100.json") + " --plot x.pdf",
       {"--plot", ".svg or .png"}},
      {"missing file", "/nonexistent/config.json", {"/nonexistent/config.json"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto r = run_spsim("compare " + c.args);
    CAPTURE(r.out);
    CHECK(r.code == 2);
    for (const auto& e : c.expect) CHECK(r.out.find(e) != std::string::npos);
    CHECK(r.out.find("internal error") == std::string::npos);
  }
}

TEST_CASE("spsim gantt: one compute and one communication series") {
  const auto dir = temp_dir("gantt");
  const auto r = run_spsim("gantt " + source_path("configs/experiments/rsa-ring-dgx-a100.json") + " --out " +
                           (dir / "g.svg").string());
  REQUIRE(r.code == 0);
  const std::string svg = slurp(dir / "g.svg");
  CHECK(count(svg, "id=\"gnuplot_plot_") == 2);
  CHECK(svg.find("communication") != std::string::npos);
}

TEST_CASE("reports/rsa-backward is what scripts/report generates now") {
  // Regenerates the whole report (checks at P = 2, 4, 8, 96 simulated points, 4 plots) into a temp
  // folder with the documented command and compares every file byte for byte.
  const auto dir = temp_dir("report");
  const auto r = run_shell("SPSIM_NO_BUILD=1 SPSIM_BUILD_DIR=" + std::string(SPSIM_BUILD_DIR) + " " +
                           source_path("scripts/report") + " " + dir.string());
  REQUIRE(r.code == 0);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    CAPTURE(name);
    const auto committed = std::filesystem::path(source_path("reports/rsa-backward")) / name;
    REQUIRE(std::filesystem::exists(committed));
    CHECK_MESSAGE(slurp(entry.path()) == slurp(committed),
                  "stale: run scripts/report and commit reports/rsa-backward");
    ++files;
  }
  CHECK(files == 5);  // README.md + 2 models × 2 clusters
}
