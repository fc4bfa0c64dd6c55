// Sweep expansion: cartesian product in the written axis order, per-point configs, per-point errors for
// impossible combinations, and errors for bad axes.
#include "analysis/config/sweep.hpp"

#include <doctest/doctest.h>

#include "analysis/config/document.hpp"
#include "tests/support/helpers.hpp"

using spsim::analysis::config_document;
using spsim::analysis::expand_sweep;
using spsim::analysis::Json;
using spsim::analysis::parse_config;
using spsim::test::contains;
using spsim::test::input_error_of;

namespace {

Json base() {
  return Json::parse(R"({
    "schema_version": 1,
    "model": { "hidden": 64, "heads": 4 },
    "workload": { "seq_len": 32 },
    "strategy": { "name": "rsa", "degree": 4 }
  })");
}

std::vector<std::string> rsa_choices() {
  const auto* rsa = spsim::strategies::builtin().find("rsa");
  REQUIRE(rsa != nullptr);
  return rsa->options.at(0).choices;
}

}  // namespace

TEST_CASE("a config without a sweep is one point, itself") {
  const auto c = parse_config(base(), "");
  const auto points = expand_sweep(c);
  REQUIRE(points.size() == 1);
  CHECK(points[0].ok());
  CHECK(points[0].values.empty());
  CHECK(config_document(*points[0].config) == config_document(c));
}

TEST_CASE("the product of the axes, first axis slowest, in the order written") {
  const auto choices = rsa_choices();
  const auto option = spsim::strategies::builtin().find("rsa")->options.at(0).name;
  const std::vector<std::int64_t> seq = {32, 64};
  const std::vector<int> degrees = {2, 4, 8};
  Json doc = base();
  // Written seq_len first, then options, then degree: not alphabetical, so order must be kept.
  doc["sweep"] = Json::object();
  doc["sweep"]["workload.seq_len"] = seq;
  doc["sweep"]["strategy.options." + option] = choices;
  doc["sweep"]["strategy.degree"] = degrees;
  const auto c = parse_config(doc, "");
  REQUIRE(c.sweep.size() == 3);
  CHECK(c.sweep[0].path == "workload.seq_len");
  CHECK(c.sweep[2].path == "strategy.degree");

  const auto points = expand_sweep(c);
  REQUIRE(points.size() == seq.size() * choices.size() * degrees.size());
  // Reference order: nested loops, the first axis outermost.
  std::size_t n = 0;
  for (auto s : seq) {
    for (const auto& choice : choices) {
      for (auto d : degrees) {
        CAPTURE(n);
        const auto& p = points[n++];
        REQUIRE(p.ok());
        REQUIRE(p.values.size() == 3);
        CHECK(p.values[0].json == Json(s).dump());
        CHECK(p.values[1].json == Json(choice).dump());
        CHECK(p.values[2].json == Json(d).dump());
        CHECK(p.config->workload.seq_len == s);
        CHECK(p.config->strategy.options.at(option) == choice);
        CHECK(p.config->strategy.degree == d);
        CHECK(p.config->sweep.empty());
        CHECK(!config_document(*p.config).contains("sweep"));
      }
    }
  }
}

TEST_CASE("an impossible point is reported, not thrown, and the others still expand") {
  Json doc = base();  // degree 4
  doc["sweep"] = Json::parse(R"({ "workload.seq_len": [32, 30, 64], "model.kv_heads": [4, 3] })");
  const auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 6);
  for (std::size_t i = 0; i < points.size(); ++i) {
    CAPTURE(i);
    const auto seq = static_cast<int>(*points[i].values[0].number);
    const auto kv = static_cast<int>(*points[i].values[1].number);
    // 30 % 4 != 0 (rsa's constraint); 4 heads % 3 kv heads != 0.
    const bool valid = seq % 4 == 0 && 4 % kv == 0;
    CHECK(points[i].ok() == valid);
    CHECK(points[i].error.empty() == valid);
    if (kv == 3) CHECK(contains(points[i].error, "kv_heads 3"));
    if (kv == 4 && seq == 30) CHECK(contains(points[i].error, "30"));
  }
}

TEST_CASE("a swept key may be absent from the base and its base value is never checked") {
  Json doc = base();
  doc["workload"].erase("seq_len");
  doc["strategy"]["degree"] = 0;  // overridden at every point
  doc["sweep"] = Json::parse(R"({ "workload.seq_len": [16, 48], "strategy.degree": [2] })");
  const auto c = parse_config(doc, "");
  CHECK(c.workload.seq_len == 16);  // a sweep template carries its first point's values
  const auto points = expand_sweep(c);
  REQUIRE(points.size() == 2);
  CHECK(points[1].config->workload.seq_len == 48);
}

TEST_CASE("sweeps create the sections they set") {
  Json doc = base();
  doc["sweep"] = Json::parse(R"({ "cluster.nodes": [1, 2], "parallel.dp": [1, 3] })");
  auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 4);
  // A cluster of only "nodes" has no GPU: the points say so; with a preset they are clusters.
  CHECK_FALSE(points[3].ok());
  CHECK(points[3].error.find("cluster.gpu") != std::string::npos);
  doc["cluster"] = Json::parse(R"({ "preset": "dgx-a100" })");
  points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points[3].ok());
  CHECK(points[3].config->cluster->nodes == 2);
  CHECK(points[3].config->parallel.dp == 3);
}

TEST_CASE("bad sweep axes are errors at sweep.<path>") {
  struct Case {
    const char* what;
    const char* sweep;
    std::string where;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"unknown path",
       R"({ "workload.seqlen": [1] })",
       "sweep.workload.seqlen",
       {"workload.seqlen", "workload.seq_len", "strategy.degree", "strategy.options.grad_reduction",
        "model.preset"}},
      {"not settable", R"({ "name": ["a"] })", "sweep.name", {"cannot be swept"}},
      {"empty list", R"({ "workload.seq_len": [] })", "sweep.workload.seq_len", {"empty"}},
      {"not a list", R"({ "workload.seq_len": 64 })", "sweep.workload.seq_len", {"list", "64"}},
      {"wrong type",
       R"({ "workload.seq_len": [32, "64"] })",
       "sweep.workload.seq_len[1]",
       {"expected an integer", "\"64\""}},
      {"out of range", R"({ "strategy.degree": [2, 0] })", "sweep.strategy.degree[1]", {"got 0"}},
      {"unknown choice",
       R"({ "workload.dtype": ["bf16", "int4"] })",
       "sweep.workload.dtype[1]",
       {"'int4'", "float32"}},
      {"unknown option value",
       R"({ "strategy.options.grad_reduction": ["sum"] })",
       "sweep.strategy.options.grad_reduction[0]",
       {"'sum'", "reduce_scatter"}},
      {"unknown strategy",
       R"({ "strategy.name": ["rsa", "nope"] })",
       "sweep.strategy.name[1]",
       {"'nope'", "rsa"}},
      {"unknown preset", R"({ "model.preset": ["gpt5"] })", "sweep.model.preset[0]", {"'gpt5'", "llama3-8b"}},
      {"dropout of 1",
       R"({ "model.hidden_dropout": [0, 1] })",
       "sweep.model.hidden_dropout[1]",
       {"probability", "got number 1"}},
      {"sweep not an object", R"([1, 2])", "sweep", {"expected an object"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    Json doc = base();
    doc["sweep"] = Json::parse(c.sweep);
    const auto err = input_error_of([&] { (void)parse_config(doc, ""); });
    REQUIRE(err.has_value());
    CAPTURE(err->what());
    CHECK(err->where() == c.where);
    for (const auto& part : c.parts) CHECK(contains(err->what(), part));
  }
}

TEST_CASE("dropout sweeps: each point gets its probability") {
  Json doc = base();
  doc["sweep"] = Json::object();
  doc["sweep"]["model.attention_dropout"] = {0, 0.1};
  const auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 2);
  CHECK(points[0].config->model.attention_dropout == 0);
  CHECK(points[1].config->model.attention_dropout == 0.1);
}

TEST_CASE("a sweep larger than the limit is refused") {
  // 1000 x 1000 = 10^6 points > max_sweep_points (10^5).
  static_assert(spsim::analysis::max_sweep_points < 1000 * 1000);
  Json values = Json::array();
  for (int i = 1; i <= 1000; ++i) values.push_back(i * 4);
  Json doc = base();
  doc["sweep"] = Json{{"workload.seq_len", values}, {"workload.batch", values}};
  const auto err = input_error_of([&] { (void)parse_config(doc, ""); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "sweep");
}

TEST_CASE("the settable paths include every registered strategy option") {
  const auto paths = spsim::analysis::sweep_paths();
  for (const auto& name : spsim::strategies::builtin().names())
    for (const auto& o : spsim::strategies::builtin().find(name)->options) {
      CAPTURE(o.name);
      CHECK(std::find(paths.begin(), paths.end(), "strategy.options." + o.name) != paths.end());
    }
}

TEST_CASE("sweep values as table cells, JSON text and numbers") {
  CHECK(spsim::analysis::sweep_value_text(Json("ring")) == "ring");
  CHECK(spsim::analysis::sweep_value_text(Json(4096)) == "4096");
  CHECK(spsim::analysis::sweep_value_text(Json(true)) == "true");
  const auto v = spsim::analysis::sweep_value("workload.seq_len", Json(4096));
  CHECK(v.path == "workload.seq_len");
  CHECK(v.json == "4096");
  CHECK(v.number == 4096.0);
  CHECK_FALSE(spsim::analysis::sweep_value("x", Json("ring")).number.has_value());
}

TEST_CASE("a 'strategy' axis lists whole strategies, each with its own options") {
  Json doc = base();
  doc["strategy"]["options"] = {{"grad_reduction", "ring"}};
  doc["sweep"] = Json::object();
  doc["sweep"]["strategy"] =
      Json::array({Json{{"name", "rsa"}, {"options", {{"grad_reduction", "reduce_scatter"}}}},
                   Json{{"name", "rsa"}}, Json{{"name", "rsa"}, {"degree", 2}}});
  const auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 3);
  for (const auto& p : points) REQUIRE(p.ok());
  // Options given replace the base's; a name without options drops them (the default applies);
  // a degree replaces the base degree.
  CHECK(points[0].config->strategy.options.at("grad_reduction") == "reduce_scatter");
  CHECK(points[1].config->strategy.options.at("grad_reduction") == "allreduce_slice_div");
  CHECK(points[2].config->strategy.degree == 2);
  CHECK(points[0].values[0].text == "rsa(grad_reduction=reduce_scatter)");
  CHECK(points[2].values[0].text == "rsa(P=2)");
  // Bad strategy objects are errors at the value's path.
  Json bad = base();
  bad["sweep"] = Json::object();
  bad["sweep"]["strategy"] = Json::array({Json{{"name", "nope"}}});
  auto e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep.strategy[0].name");
  bad["sweep"]["strategy"] = Json::array({Json{{"name", "rsa"}, {"layout", "x"}}});
  e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep.strategy[0].layout");
}

// A 'parallel' axis: layouts of the same GPUs; the keys a value names replace the base's, strategy.degree
// gives way to a cp the point sets, and the cell reads "tp=2, cp=2".
TEST_CASE("a 'parallel' axis lists layouts; strategy.degree and parallel.cp are one axis") {
  Json doc = Json::parse(R"({
    "schema_version": 1,
    "model": { "hidden": 64, "heads": 8, "kv_heads": 4, "ffn_hidden": 64 },
    "workload": { "seq_len": 32, "scope": "layer" },
    "strategy": { "name": "ring", "degree": 4 },
    "parallel": { "dp": 2 }
  })");
  doc["sweep"] = {{"parallel", Json::array({Json{{"tp", 1}, {"cp", 4}}, Json{{"tp", 2}, {"cp", 2}},
                                            Json{{"tp", 4}, {"cp", 1}}})}};
  const auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 3);
  for (const auto& p : points) {
    CAPTURE(p.error);
    REQUIRE(p.ok());
    CHECK(p.config->world() == 8);  // tp × cp = 4, dp 2 kept from the base
    CHECK(p.config->parallel.dp == 2);
  }
  CHECK(points[1].values[0].text == "tp=2, cp=2");  // keys in the order written
  CHECK(points[1].config->strategy.degree == 2);
  CHECK(points[1].config->layer.name == "megatron_sp");  // tp > 1: Megatron's layer by default
  CHECK(points[0].config->layer.name == "replicated");
  // Bad layout objects are errors at the value's key.
  Json bad = doc;
  bad["sweep"] = {{"parallel", Json::array({Json{{"tp", 0}}})}};
  auto e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep.parallel[0].tp");
  bad["sweep"] = {{"parallel", Json::array({Json{{"pp", 2}}})}};
  e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep.parallel[0].pp");
  CHECK(contains(e->what(), "valid keys: tp, cp, dp, bucket_mb, distributed_optimizer"));
  // Two axes that both set the CP degree would overwrite each other.
  bad["sweep"] = {{"strategy.degree", {2, 4}}, {"parallel", Json::array({Json{{"cp", 2}}})}};
  e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep");
  CHECK(contains(e->what(), "context-parallel degree"));
  // parallel.cp alone gives the degree; strategy.degree may then be left out.
  Json cp_only = doc;
  cp_only.erase("sweep");
  cp_only["strategy"].erase("degree");
  cp_only["parallel"]["cp"] = 2;
  CHECK(parse_config(cp_only, "").strategy.degree == 2);
  cp_only["parallel"].erase("cp");
  e = input_error_of([&] { (void)parse_config(cp_only, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "strategy.degree");
}

// layer options sweep like strategy options; without a layer name, options mean megatron_sp (so a tp
// axis that includes 1 keeps its layer options valid).
TEST_CASE("layer.options axes and the default layer with options") {
  Json doc = Json::parse(R"({
    "schema_version": 1,
    "model": { "hidden": 64, "heads": 8, "kv_heads": 4, "ffn_hidden": 64 },
    "workload": { "seq_len": 32, "scope": "layer" },
    "strategy": { "name": "ring", "degree": 2 },
    "layer": { "options": { "dx_reduction": "sum" } }
  })");
  doc["sweep"] = {{"layer.options.sequence_parallel", {true, false}}, {"parallel.tp", {1, 2}}};
  const auto points = expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 4);
  for (const auto& p : points) {
    CAPTURE(p.error);
    REQUIRE(p.ok());
    CHECK(p.config->layer.name == "megatron_sp");
  }
  CHECK(points[2].config->layer.options.at("sequence_parallel") == "false");
  Json bad = doc;
  bad["sweep"] = {{"layer.options.sequence_parallel", {"maybe"}}};
  const auto e = input_error_of([&] { (void)parse_config(bad, ""); });
  REQUIRE(e.has_value());
  CHECK(e->where() == "sweep.layer.options.sequence_parallel[0]");
  CHECK(contains(e->what(), "valid choices: true, false"));
}

TEST_CASE("a sweep over a fat tree's oversubscription sets it in each point's cluster") {
  Json doc = Json::parse(R"({"schema_version": 1, "name": "f", "model": {"preset": "llama3-8b"},
    "workload": {"seq_len": 65536}, "strategy": {"name": "ring", "degree": 32},
    "cluster": {"preset": "dgx-h100", "nodes": 4,
                "inter_node": {"fabric": {"kind": "fat_tree", "nodes_per_leaf": 2}}},
    "sweep": {"cluster.inter_node.fabric.oversubscription": [1, 2.5, 0.5]}})");
  const auto points = spsim::analysis::expand_sweep(parse_config(doc, ""));
  REQUIRE(points.size() == 3);
  REQUIRE(points[0].ok());
  REQUIRE(points[1].ok());
  CHECK(points[0].config->cluster->inter_node.fabric.oversubscription == 1);
  CHECK(points[1].config->cluster->inter_node.fabric.oversubscription == 2.5);
  CHECK(points[1].config->cluster->inter_node.fabric.nodes_per_leaf == 2);
  // Below 1 is an invalid point naming the key, not an aborted sweep.
  CHECK_FALSE(points[2].ok());
  CHECK(points[2].error.find("cluster.inter_node.fabric.oversubscription") != std::string::npos);
}
