// Config parsing: a valid document becomes typed fields; every bad input is an InputError naming the
// JSON path, the bad value and the valid choices.
#include "analysis/config/config.hpp"

#include <doctest/doctest.h>

#include <climits>
#include <fstream>
#include <functional>
#include <limits>

#include "analysis/config/document.hpp"
#include "analysis/config/model.hpp"
#include "analysis/config/schema.hpp"
#include "sim/collectives/algorithm.hpp"
#include "tests/support/helpers.hpp"

using spsim::analysis::Json;
using spsim::analysis::parse_config;
using spsim::test::contains;
using spsim::test::input_error_of;

namespace {

// A small valid config: 64 = 4 heads x 16, 32 tokens over 4 ranks.
Json base() {
  return Json::parse(R"({
    "schema_version": 1, "name": "t",
    "model": { "hidden": 64, "heads": 4 },
    "workload": { "seq_len": 32 },
    "strategy": { "name": "rsa", "degree": 4 }
  })");
}

struct ErrorCase {
  const char* what;
  std::function<void(Json&)> edit;
  std::string where;
  std::vector<std::string> parts = {};  // the message must contain each
};

void check_cases(const std::vector<ErrorCase>& cases) {
  for (const auto& c : cases) {
    CAPTURE(c.what);
    Json doc = base();
    c.edit(doc);
    const auto err = input_error_of([&] { (void)parse_config(doc, "exp.json"); });
    REQUIRE(err.has_value());
    CAPTURE(err->what());
    CHECK(err->where() == c.where);
    for (const auto& part : c.parts) {
      CAPTURE(part);
      CHECK(contains(err->what(), part));
    }
  }
}

std::vector<std::string> with(std::vector<std::string> parts, const std::vector<std::string>& more) {
  parts.insert(parts.end(), more.begin(), more.end());
  return parts;
}

}  // namespace

TEST_CASE("a valid config parses into typed fields, defaults filled in") {
  Json doc = base();
  doc["workload"] = Json::parse(R"({ "seq_len": 64, "batch": 2, "dtype": "fp16", "causal": true,
                                     "scope": "layer", "passes": "fwd" })");
  doc["cluster"] = Json::parse(R"({ "preset": "dgx-a100", "nodes": 1 })");
  doc["parallel"] = Json::parse(R"({ "dp": 2 })");
  doc["collectives"] = Json::parse(R"({ "all_reduce": "ring", "protocol": "ll128" })");
  doc["simulation"] = Json::parse(R"({ "network": "analytical", "trace_out": "out/t.json" })");
  doc["check"] = Json::parse(R"({ "dtype": "float32", "seed": 7 })");
  const auto c = parse_config(doc, "/some/where/exp.json");
  CHECK(c.name == "t");
  CHECK(c.source == "/some/where/exp.json");
  // head_dim = hidden / heads = 64 / 4; kv_heads defaults to heads; ffn_hidden to 4 * hidden.
  CHECK(c.model.hidden == 64);
  CHECK(c.model.heads == 4);
  CHECK(c.model.kv_heads == 4);
  CHECK(c.model.head_dim == 16);
  CHECK(c.model.ffn_hidden == 256);
  CHECK(c.model.layers == 1);
  CHECK(c.workload.seq_len == 64);
  CHECK(c.workload.batch == 2);
  CHECK(c.workload.dtype == spsim::rt::DType::f16);
  CHECK(c.workload.causal);
  CHECK(c.workload.scope == spsim::models::Scope::layer);
  CHECK(c.workload.passes == spsim::models::Passes::fwd);
  REQUIRE(c.cluster.has_value());  // typed: the preset and its hardware files already read
  CHECK(c.cluster->name == "dgx-a100");
  CHECK(c.cluster->nodes == 1);
  CHECK(c.cluster->gpu.name == "a100-sxm4-80gb");
  CHECK(c.strategy.name == "rsa");
  CHECK(c.strategy.degree == 4);
  CHECK(c.parallel.dp == 2);
  CHECK(c.collectives.of(spsim::rt::CommKind::all_reduce) == "ring");
  CHECK(c.collectives.of(spsim::rt::CommKind::reduce_scatter) == "auto");
  CHECK(c.collectives.protocol == spsim::sim::Protocol::ll128);
  CHECK(c.simulation.network == spsim::sim::NetworkMode::analytical);
  CHECK(c.simulation.trace_out == "out/t.json");
  CHECK(c.check.dtype == spsim::rt::DType::f32);
  CHECK(c.check.seed == 7);
  CHECK(c.sweep.empty());
  CHECK(spsim::analysis::config_document(c) == doc);
  CHECK(c.check.dtype_given);
  CHECK(c.strategy.entry == spsim::strategies::builtin().find("rsa"));
  // Every registered option of the strategy is present, unset ones at the registry's default.
  const auto* info = spsim::strategies::builtin().find("rsa");
  REQUIRE(info != nullptr);
  for (const auto& o : info->options) {
    CAPTURE(o.name);
    REQUIRE(c.strategy.options.count(o.name) == 1);
    CHECK(c.strategy.options.at(o.name) == o.default_value);
  }
}

TEST_CASE("collective algorithms are the simulator registry's names, aliases resolved") {
  // "rhd" is declared by the registry as halving_doubling's alias: the config keeps the registry name.
  Json doc = base();
  doc["collectives"] = Json::parse(R"({ "all_reduce": "rhd", "all_to_all": "direct" })");
  const auto c = parse_config(doc, "");
  CHECK(c.collectives.of(spsim::rt::CommKind::all_reduce) == "halving_doubling");
  CHECK(c.collectives.of(spsim::rt::CommKind::all_to_all) == "direct");
  // The choices offered for a kind are exactly the registry's algorithms implementing it, plus auto.
  const auto registry = spsim::sim::default_algorithms();
  for (auto kind : spsim::rt::tuned_kinds()) {
    CAPTURE(spsim::rt::comm_kind_name(kind));
    std::vector<std::string> want = {"auto"};
    for (const auto& name : registry.names(kind)) {
      want.push_back(name);
      for (const auto& alias : registry.find(name)->aliases) want.push_back(alias);
    }
    CHECK(spsim::analysis::schema::algorithm_choices(kind) == want);
  }
  // direct does not implement all_reduce: the config says so before anything is simulated.
  doc["collectives"] = Json::parse(R"({ "all_reduce": "direct" })");
  const auto err = input_error_of([&] { (void)parse_config(doc, ""); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "collectives.all_reduce");
  CHECK(contains(err->message(),
                 "valid choices: auto, ring, tree, nvls, nvls_tree, halving_doubling, rhd, hierarchical"));
}

TEST_CASE("defaults of optional sections and the name from the file") {
  Json doc = base();
  doc.erase("name");
  const auto c = parse_config(doc, "dir/my-run.json");
  CHECK(c.name == "my-run");
  CHECK(c.workload.batch == 1);
  CHECK(c.workload.dtype == spsim::rt::DType::bf16);
  CHECK(!c.workload.causal);
  CHECK(c.workload.scope == spsim::models::Scope::attention);
  CHECK(c.workload.passes == spsim::models::Passes::fwd_bwd);
  CHECK_FALSE(c.cluster.has_value());
  CHECK(c.parallel.dp == 1);
  CHECK(c.collectives.of(spsim::rt::CommKind::all_reduce) == "auto");
  CHECK_FALSE(c.collectives.protocol.has_value());
  CHECK(c.simulation.network == spsim::sim::NetworkMode::flow);
  CHECK_FALSE(c.check.dtype_given);
  CHECK(c.check.dtype == spsim::rt::DType::f64);
  CHECK(c.check.seed == 1);
}

TEST_CASE("every workload dtype name maps to its DType") {
  const std::vector<std::pair<std::string, spsim::rt::DType>> names = {{"bf16", spsim::rt::DType::bf16},
                                                                       {"fp16", spsim::rt::DType::f16},
                                                                       {"float32", spsim::rt::DType::f32},
                                                                       {"float64", spsim::rt::DType::f64}};
  for (const auto& [name, dtype] : names) {
    CAPTURE(name);
    Json doc = base();
    doc["workload"]["dtype"] = name;
    CHECK(parse_config(doc, "").workload.dtype == dtype);
  }
}

TEST_CASE("strategy options may be strings or integers and are stored as strings") {
  spsim::strategies::Registry registry;
  spsim::strategies::StrategyInfo info;
  info.name = "fake";
  info.options = {{"chunks", "an integer option", {}, "1"}, {"mode", "a named option", {"a", "b"}, "a"}};
  info.no_closed_form = info.no_memory = "a test strategy: no models";
  registry.add(info);
  Json doc = base();
  doc["strategy"] =
      Json::parse(R"({ "name": "fake", "degree": 2, "options": { "chunks": 8, "mode": "b" } })");
  const auto c = parse_config(doc, "", registry);
  CHECK(c.strategy.options.at("chunks") == "8");
  CHECK(c.strategy.options.at("mode") == "b");
}

TEST_CASE("structural errors name the path, the bad value and the valid keys") {
  const auto top_keys = std::vector<std::string>{"schema_version", "model", "workload", "strategy", "sweep"};
  check_cases({
      {"unknown top-level key", [](Json& d) { d["colectives"] = Json::object(); }, "colectives",
       with({"'colectives'", "collectives"}, top_keys)},
      {"unknown workload key",
       [](Json& d) { d["workload"]["seqlen"] = 3; },
       "workload.seqlen",
       {"'seqlen'", "seq_len", "batch", "dtype", "causal", "scope", "passes"}},
      {"unknown strategy key",
       [](Json& d) { d["strategy"]["degre"] = 3; },
       "strategy.degre",
       {"'degre'", "name", "degree", "options"}},
      {"unknown model key",
       [](Json& d) { d["model"]["hiden"] = 3; },
       "model.hiden",
       {"'hiden'", "preset", "hf_config", "hidden", "kv_heads", "head_dim", "ffn_hidden", "layers", "vocab"}},
      {"unknown check key",
       [](Json& d) { d["check"] = Json::parse(R"({"sed": 1})"); },
       "check.sed",
       {"'sed'", "dtype", "seed"}},
      {"unknown parallel key",
       [](Json& d) { d["parallel"] = Json::parse(R"({"tpp": 2})"); },
       "parallel.tpp",
       {"'tpp'", "tp", "cp", "dp", "bucket_mb"}},
      {"missing schema_version",
       [](Json& d) { d.erase("schema_version"); },
       "schema_version",
       {"missing", "schema_version"}},
      {"schema_version 2", [](Json& d) { d["schema_version"] = 2; }, "schema_version", {"2", "version 1"}},
      {"missing workload", [](Json& d) { d.erase("workload"); }, "workload", {"missing", "workload"}},
      {"missing seq_len",
       [](Json& d) { d["workload"].erase("seq_len"); },
       "workload.seq_len",
       {"missing", "seq_len"}},
      {"missing degree",
       [](Json& d) { d["strategy"].erase("degree"); },
       "strategy.degree",
       {"missing", "degree"}},
      {"workload not an object", [](Json& d) { d["workload"] = 5; }, "workload", {"expected an object", "5"}},
      {"cluster not an object",
       [](Json& d) { d["cluster"] = "dgx"; },
       "cluster",
       {"expected an object", "\"dgx\""}},
      {"options not an object",
       [](Json& d) { d["strategy"]["options"] = Json::array(); },
       "strategy.options",
       {"expected an object"}},
  });
}

TEST_CASE("the root must be an object") {
  const auto err = input_error_of([] { (void)parse_config(Json::array({1, 2}), "exp.json"); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "exp.json");
  CHECK(contains(err->what(), "array"));
}

TEST_CASE("wrong types and out-of-range numbers") {
  check_cases({
      {"seq_len as a string",
       [](Json& d) { d["workload"]["seq_len"] = "4096"; },
       "workload.seq_len",
       {"expected an integer", "\"4096\""}},
      {"seq_len as a float",
       [](Json& d) { d["workload"]["seq_len"] = 40.5; },
       "workload.seq_len",
       {"expected an integer", "40.5"}},
      {"causal as a string",
       [](Json& d) { d["workload"]["causal"] = "yes"; },
       "workload.causal",
       {"true or false", "\"yes\""}},
      {"name as a number", [](Json& d) { d["name"] = 3; }, "name", {"expected a string", "3"}},
      {"strategy name as a number",
       [](Json& d) { d["strategy"]["name"] = 1; },
       "strategy.name",
       {"expected a string", "1"}},
      {"degree 0", [](Json& d) { d["strategy"]["degree"] = 0; }, "strategy.degree", {">= 1", "got 0"}},
      {"degree negative",
       [](Json& d) { d["strategy"]["degree"] = -2; },
       "strategy.degree",
       {">= 1", "got -2"}},
      {"degree above INT_MAX",
       [](Json& d) { d["strategy"]["degree"] = std::int64_t{INT_MAX} + 1; },
       "strategy.degree",
       {std::to_string(std::int64_t{INT_MAX} + 1)}},
      {"degree as a float",
       [](Json& d) { d["strategy"]["degree"] = 2.5; },
       "strategy.degree",
       {"expected an integer", "2.5"}},
      {"batch 0", [](Json& d) { d["workload"]["batch"] = 0; }, "workload.batch", {"got 0"}},
      {"seq_len beyond int64",
       [](Json& d) { d["workload"]["seq_len"] = std::uint64_t{1} << 63; },
       "workload.seq_len",
       {"out of range", "9223372036854775808"}},
      {"dp 0",
       [](Json& d) { d["parallel"] = Json::parse(R"({"dp": 0})"); },
       "parallel.dp",
       {">= 1", "got 0"}},
      {"seed negative",
       [](Json& d) { d["check"] = Json::parse(R"({"seed": -1})"); },
       "check.seed",
       {">= 0", "-1"}},
      {"seed as a string",
       [](Json& d) { d["check"] = Json::parse(R"({"seed": "1"})"); },
       "check.seed",
       {"non-negative integer", "\"1\""}},
      {"hidden 0", [](Json& d) { d["model"]["hidden"] = 0; }, "model.hidden", {">= 1", "got 0"}},
      {"option as a boolean that is not a choice",
       [](Json& d) { d["strategy"]["options"] = Json::parse(R"({"grad_reduction": true})"); },
       "strategy.options.grad_reduction",
       {"unknown value 'true'", "reduce_scatter"}},
      {"option as a number",
       [](Json& d) { d["strategy"]["options"] = Json::parse(R"({"grad_reduction": 1.5})"); },
       "strategy.options.grad_reduction",
       {"string, an integer or a boolean", "1.5"}},
  });
}

TEST_CASE("enumerated names list the valid choices") {
  check_cases({
      {"workload dtype",
       [](Json& d) { d["workload"]["dtype"] = "int8"; },
       "workload.dtype",
       {"'int8'", "bf16", "fp16", "float32", "float64"}},
      {"workload dtype as a number",
       [](Json& d) { d["workload"]["dtype"] = 16; },
       "workload.dtype",
       {"16", "bf16", "fp16", "float32", "float64"}},
      {"scope",
       [](Json& d) { d["workload"]["scope"] = "block"; },
       "workload.scope",
       {"'block'", "attention", "layer", "model"}},
      {"passes",
       [](Json& d) { d["workload"]["passes"] = "bwd"; },
       "workload.passes",
       {"'bwd'", "fwd", "fwd+bwd"}},
      {"check dtype",
       [](Json& d) { d["check"] = Json::parse(R"({"dtype": "bf16"})"); },
       "check.dtype",
       {"'bf16'", "float64", "float32"}},
      {"network",
       [](Json& d) { d["simulation"] = Json::parse(R"({"network": "packet"})"); },
       "simulation.network",
       {"'packet'", "flow", "analytical"}},
      {"collective",
       [](Json& d) { d["collectives"] = Json::parse(R"({"all_reduce": "magic"})"); },
       "collectives.all_reduce",
       {"'magic'", "ring", "auto"}},
  });
}

TEST_CASE("strategy names and options come from the registry") {
  const auto& registry = spsim::strategies::builtin();
  const auto* rsa = registry.find("rsa");
  REQUIRE(rsa != nullptr);
  REQUIRE(!rsa->options.empty());
  const auto& option = rsa->options.front();
  check_cases({
      {"unknown strategy", [](Json& d) { d["strategy"]["name"] = "ringz"; }, "strategy.name",
       with({"'ringz'"}, registry.names())},
      {"unknown option value", [&](Json& d) { d["strategy"]["options"][option.name] = "sum"; },
       "strategy.options." + option.name, with({"'sum'"}, option.choices)},
      {"unknown option key",
       [](Json& d) { d["strategy"]["options"]["foo"] = "x"; },
       "strategy.options.foo",
       {"'foo'", option.name}},
  });
}

TEST_CASE("an unknown strategy lists the names of the registry it was given") {
  spsim::strategies::Registry registry;
  spsim::strategies::StrategyInfo info;
  info.name = "only_this_one";
  info.no_closed_form = info.no_memory = "a test strategy: no models";
  registry.add(info);
  const auto err = input_error_of([&] { (void)parse_config(base(), "", registry); });  // base uses "rsa"
  REQUIRE(err.has_value());
  CHECK(err->where() == "strategy.name");
  CHECK(contains(err->what(), "'rsa'"));
  CHECK(contains(err->what(), "only_this_one"));
}

TEST_CASE("cross-field constraints") {
  check_cases({
      // rsa's own check: 30 tokens cannot be split evenly over 4 ranks.
      {"seq_len not divisible by degree",
       [](Json& d) { d["workload"]["seq_len"] = 30; },
       "strategy",
       {"30", "4", "rsa"}},
      {"heads not divisible by kv_heads",
       [](Json& d) { d["model"]["kv_heads"] = 3; },
       "model.kv_heads",
       {"heads 4", "kv_heads 3"}},
      {"kv_heads above heads",
       [](Json& d) { d["model"]["kv_heads"] = 8; },
       "model.kv_heads",
       {"heads 4", "kv_heads 8"}},
      {"head_dim not derivable",
       [](Json& d) { d["model"]["hidden"] = 66; },
       "model.head_dim",
       {"hidden 66", "heads 4", "head_dim"}},
  });
  // An explicit head_dim lifts the divisibility requirement.
  Json doc = base();
  doc["model"]["hidden"] = 66;
  doc["model"]["head_dim"] = 16;
  CHECK(parse_config(doc, "").model.head_dim == 16);
}

TEST_CASE("a strategy's own constraint is an error at 'strategy' carrying its reason") {
  spsim::strategies::Registry registry;
  spsim::strategies::StrategyInfo info;
  info.name = "heads_split";
  info.check = [](const spsim::models::AttnProblem& p, int degree,
                  const spsim::strategies::Options&) -> std::optional<std::string> {
    if (p.heads % degree != 0)
      return "heads " + std::to_string(p.heads) + " not divisible by " + std::to_string(degree);
    return std::nullopt;
  };
  info.no_closed_form = info.no_memory = "a test strategy: no models";
  registry.add(info);
  Json doc = base();  // 4 heads, 32 tokens
  doc["strategy"] = Json::parse(R"({ "name": "heads_split", "degree": 2 })");
  CHECK(parse_config(doc, "", registry).strategy.degree == 2);
  doc["strategy"]["degree"] = 8;  // 32 tokens split fine, 4 heads do not
  const auto err = input_error_of([&] { (void)parse_config(doc, "", registry); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "strategy");
  CHECK(contains(err->what(), "heads 4 not divisible by 8"));
  CHECK(contains(err->what(), "heads_split"));
}

TEST_CASE("load_config: missing file, folder, malformed JSON") {
  spsim::test::TempDir dir;
  const auto missing = dir.path() / "nope.json";
  auto err = input_error_of([&] { (void)spsim::analysis::load_config(missing); });
  REQUIRE(err.has_value());
  CHECK(err->where() == missing.string());
  CHECK(contains(err->what(), "no such file"));

  err = input_error_of([&] { (void)spsim::analysis::load_config(dir.path()); });
  REQUIRE(err.has_value());
  CHECK(contains(err->what(), "directory"));

  // The stray x is the 3rd character of line 3.
  const auto bad = dir.path() / "bad.json";
  spsim::test::write_file(bad, "{\n  \"a\": 1,\n  x\n}\n");
  err = input_error_of([&] { (void)spsim::analysis::load_config(bad); });
  REQUIRE(err.has_value());
  CAPTURE(err->what());
  CHECK(err->where() == bad.string());
  CHECK(contains(err->what(), "malformed JSON"));
  CHECK(contains(err->what(), "line 3, column 3"));

  // Truncated document: the error is at the end of the text (line 2, after "  \"a\": 1").
  spsim::test::write_file(bad, "{\n  \"a\": 1");
  err = input_error_of([&] { (void)spsim::analysis::load_config(bad); });
  REQUIRE(err.has_value());
  CAPTURE(err->what());
  CHECK(contains(err->what(), "line 2"));
}

TEST_CASE("load_config reads a file and keeps its path as the source") {
  spsim::test::TempDir dir;
  const auto file = dir.path() / "exp.json";
  spsim::test::write_file(file, base().dump(2));
  const auto c = spsim::analysis::load_config(file);
  CHECK(c.source == file);
  CHECK(spsim::analysis::config_document(c) == base());
  CHECK(c.model.head_dim == 16);
}

// model.mlp: gelu by default; the Llama presets and a Hugging Face config with hidden_act silu are SwiGLU.
TEST_CASE("model.mlp: gelu, swiglu, from presets and Hugging Face configs; a bad value names the key") {
  Json doc = base();
  CHECK(parse_config(doc, "").model.mlp == spsim::models::Mlp::gelu);
  doc["model"]["mlp"] = "swiglu";
  CHECK(parse_config(doc, "").model.mlp == spsim::models::Mlp::swiglu);
  Json preset = base();
  preset["model"] = Json{{"preset", "llama3-8b"}};
  preset["strategy"]["degree"] = 8;
  CHECK(parse_config(preset, "").model.mlp == spsim::models::Mlp::swiglu);
  preset["model"]["mlp"] = "gelu";  // a field next to the preset overrides it
  CHECK(parse_config(preset, "").model.mlp == spsim::models::Mlp::gelu);
  spsim::test::TempDir dir;
  std::ofstream(dir.path() / "config.json") << R"({"hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "hidden_act": "silu"})";
  Json hf = base();
  hf["model"] = Json{{"hf_config", (dir.path() / "config.json").string()}};
  CHECK(parse_config(hf, "").model.mlp == spsim::models::Mlp::swiglu);
  check_cases({{"bad mlp", [](Json& d) { d["model"]["mlp"] = "relu"; }, "model.mlp", {"'relu'", "gelu", "swiglu"}}});
}

TEST_CASE("model.attention_dropout and hidden_dropout: probabilities, 0 by default; attention dropout needs rsa") {
  Json doc = base();
  CHECK(parse_config(doc, "").model.attention_dropout == 0);
  CHECK(parse_config(doc, "").model.hidden_dropout == 0);
  doc["model"]["attention_dropout"] = 0.1;
  doc["model"]["hidden_dropout"] = 0.2;
  const auto c = parse_config(doc, "");
  CHECK(c.model.attention_dropout == 0.1);
  CHECK(c.model.hidden_dropout == 0.2);
  CHECK(spsim::models::attention_problem(c.model, c.workload).dropout == 0.1);
  Json preset = base();  // next to a preset
  preset["model"] = Json{{"preset", "gpt3-1.3b"}, {"hidden_dropout", 0.1}};
  preset["strategy"] = Json{{"name", "ulysses"}, {"degree", 4}};
  preset["workload"]["scope"] = "layer";
  CHECK(parse_config(preset, "").model.hidden_dropout == 0.1);
  check_cases({
      {"negative", [](Json& d) { d["model"]["attention_dropout"] = -0.1; }, "model.attention_dropout",
       {"probability", "-0.1"}},
      {"one", [](Json& d) { d["model"]["hidden_dropout"] = 1; }, "model.hidden_dropout", {"< 1"}},
      {"string", [](Json& d) { d["model"]["hidden_dropout"] = "0.1"; }, "model.hidden_dropout",
       {"probability", "string \"0.1\""}},
      {"fused kernels",
       [](Json& d) {
         d["model"]["attention_dropout"] = 0.1;
         d["strategy"] = Json{{"name", "ring"}, {"degree", 4}};
       },
       "model.attention_dropout", {"'ring'", "rsa", "set model.attention_dropout to 0"}},
  });
}

TEST_CASE("a plain nlohmann::json document is accepted too") {
  const nlohmann::json doc = nlohmann::json::parse(base().dump());
  const auto c = parse_config(doc, "");
  CHECK(c.model.head_dim == 16);
  CHECK(nlohmann::json(spsim::analysis::config_document(c)) ==
        doc);  // same content (key order is the sorted one of nlohmann::json)
}

TEST_CASE("sizes spsim cannot index or time are errors at the key that makes them") {
  check_cases({
      {"batch", [](Json& d) { d["workload"]["batch"] = 1000000000000000; }, "workload"},
      {"vocab", [](Json& d) { d["model"]["vocab"] = 4611686018427387904; }, "model.vocab"},
      {"layers", [](Json& d) { d["model"]["layers"] = 1000001; }, "model.layers"},
      {"world",
       [](Json& d) {
         d["parallel"] = Json{{"dp", 2147483647}};
       },
       "parallel.dp"},
      {"bucket",
       [](Json& d) {
         d["parallel"] = Json{{"bucket_mb", 1e15}};
       },
       "parallel.bucket_mb"},
      {"nodes",
       [](Json& d) {
         d["cluster"] = Json{{"preset", "dgx-h100"}, {"nodes", 65537}};
       },
       "cluster.nodes"},
      {"latency",
       [](Json& d) {
         d["cluster"] =
             Json::parse(R"({"preset": "dgx-h100", "inter_node": {"link": "ib-ndr", "latency_us": 1e13}})");
       },
       "cluster.inter_node.latency_us"},
  });
}

TEST_CASE("workload.mask: kinds, documents as lengths or a distribution, a window") {
  const auto parse = [](const Json& mask) {
    Json d = base();
    d["workload"]["mask"] = mask;
    return parse_config(d, "").workload;
  };
  CHECK(parse("causal").causal);
  CHECK(!parse("causal").bounds.active());
  CHECK(!parse(Json{{"kind", "full"}}).causal);
  const auto docs = parse(Json{{"kind", "document_causal"}, {"documents", {10, 2, 20}}});
  CHECK(docs.causal);
  CHECK(docs.bounds.document_lengths() == std::vector<std::int64_t>{10, 2, 20});
  CHECK(docs.bounds.window() == 0);
  const auto both = parse(Json{{"kind", "document_causal"}, {"documents", {16, 16}}, {"window", 4}});
  CHECK(both.bounds.window() == 4);
  const auto window = parse(Json{{"kind", "sliding_window"}, {"window", 8}, {"causal", false}});
  CHECK(!window.causal);
  CHECK(window.bounds.window() == 8);
  CHECK(!window.bounds.has_documents());
  // A window past the sequence restricts nothing: kept as seq_len (32).
  CHECK(parse(Json{{"kind", "sliding_window"}, {"window", std::int64_t{1} << 62}}).bounds.window() == 32);
  // Drawn lengths: within [min_len, max_len] but the last (cut to end at seq_len), summing to seq_len,
  // the same for the same seed.
  const Json draw = {{"kind", "document_causal"},
                     {"documents", {{"distribution", "uniform"}, {"min_len", 3}, {"max_len", 9}, {"seed", 5}}}};
  const auto drawn = parse(draw).bounds.document_lengths();
  std::int64_t total = 0;
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    total += drawn[i];
    if (i + 1 < drawn.size()) CHECK((drawn[i] >= 3 && drawn[i] <= 9));
  }
  CHECK(total == 32);
  CHECK(drawn.size() >= 4);  // 32 tokens in documents of at most 9
  CHECK(parse(draw).bounds.document_lengths() == drawn);
  // pad_to: every length a multiple of 8 (32 is one too, so the last is).
  const auto padded = parse(Json{{"kind", "document_causal"},
                                 {"documents", {{"distribution", "uniform"}, {"max_len", 20}, {"pad_to", 8}}}});
  for (const auto len : padded.bounds.document_lengths()) CHECK(len % 8 == 0);
  // Lengths near 2^63 rounded up to pad_to without overflowing: one document of seq_len.
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  CHECK(parse(Json{{"kind", "document_causal"},
                   {"documents", {{"distribution", "uniform"}, {"min_len", huge}, {"max_len", huge}, {"pad_to", 2}}}})
            .bounds.document_lengths() == std::vector<std::int64_t>{32});
  const auto expo = parse(Json{{"kind", "document_causal"},
                               {"documents", {{"distribution", "exponential"}, {"mean_len", 4}, {"max_len", 12}}}});
  for (const auto len : expo.bounds.document_lengths()) CHECK((len >= 1 && len <= 12));
  // workload.causal may say the same thing.
  Json d = base();
  d["workload"]["causal"] = true;
  d["workload"]["mask"] = Json{{"kind", "sliding_window"}, {"window", 8}};
  CHECK(parse_config(d, "").workload.causal);
}

TEST_CASE("bad workload.mask specs name the key, the value and the valid choices") {
  const auto set = [](Json mask) { return [mask](Json& d) { d["workload"]["mask"] = mask; }; };
  check_cases({
      {"unknown kind", set("diagonal"), "workload.mask",
       {"'diagonal'", "causal, full, document_causal, sliding_window"}},
      {"kind needing parameters", set("document_causal"), "workload.mask", {"needs parameters", "documents"}},
      {"not a kind or an object", set(3), "workload.mask", {"expected a mask kind", "3"}},
      {"unknown key", set(Json{{"kind", "causal"}, {"size", 1}}), "workload.mask.size", {"'size'", "kind"}},
      {"lengths short of the sequence", set(Json{{"kind", "document_causal"}, {"documents", {10, 2}}}),
       "workload.mask.documents", {"sum to 12", "workload.seq_len = 32"}},
      {"lengths past the sequence", set(Json{{"kind", "document_causal"}, {"documents", {10, 20, 5}}}),
       "workload.mask.documents[2]", {"sum past workload.seq_len = 32"}},
      {"a zero length", set(Json{{"kind", "document_causal"}, {"documents", {32, 0}}}),
       "workload.mask.documents[1]", {">= 1", "got 0"}},
      {"no documents", set(Json{{"kind", "document_causal"}, {"documents", Json::array()}}),
       "workload.mask.documents", {"at least one"}},
      {"window 0", set(Json{{"kind", "sliding_window"}, {"window", 0}}), "workload.mask.window",
       {">= 1", "got 0"}},
      {"negative window", set(Json{{"kind", "document_causal"}, {"documents", {32}}, {"window", -4}}),
       "workload.mask.window", {">= 1", "got -4"}},
      {"window without a value", set(Json{{"kind", "sliding_window"}}), "workload.mask.window", {}},
      {"unknown distribution",
       set(Json{{"kind", "document_causal"}, {"documents", {{"distribution", "zipf"}, {"max_len", 8}}}}),
       "workload.mask.documents.distribution", {"'zipf'", "uniform, exponential"}},
      {"min_len above max_len",
       set(Json{{"kind", "document_causal"},
                {"documents", {{"distribution", "uniform"}, {"min_len", 9}, {"max_len", 8}}}}),
       "workload.mask.documents.min_len", {"<= max_len = 8", "got 9"}},
      {"mean_len for uniform",
       set(Json{{"kind", "document_causal"},
                {"documents", {{"distribution", "uniform"}, {"mean_len", 4}, {"max_len", 8}}}}),
       "workload.mask.documents.mean_len", {"exponential distribution only"}},
      {"too many documents to draw",
       [](Json& d) {
         d["workload"]["seq_len"] = std::int64_t{1} << 30;
         d["workload"]["mask"] = Json{{"kind", "document_causal"},
                                      {"documents", {{"distribution", "uniform"}, {"max_len", 8}}}};
       },
       "workload.mask.documents", {"1073741825 documents is more than spsim handles (65536)", "min_len"}},
      {"window on a causal kind", set(Json{{"kind", "causal"}, {"window", 4}}), "workload.mask.window",
       {"sliding_window"}},
      {"documents on a window kind", set(Json{{"kind", "sliding_window"}, {"window", 4}, {"documents", {32}}}),
       "workload.mask.documents", {"document_causal"}},
      {"causal disagreeing with the mask",
       [](Json& d) {
         d["workload"]["causal"] = true;
         d["workload"]["mask"] = "full";
       },
       "workload.causal", {"workload.mask (full) is not causal"}},
  });
}

TEST_CASE("compute slowdown during communication: NCCL's channels hold their SMs, unless the config says") {
  // dgx-a100: NCCL builds 24 channels per GPU, one CTA each, on a GPU of 108 SMs: compute keeps 84 SMs
  // and takes 108/84 as long, a slowdown of 24/84. hgx-h800: 16 channels of 132 SMs, 16/116.
  Json doc = base();
  doc["cluster"] = Json{{"preset", "dgx-a100"}};
  auto c = parse_config(doc, "exp.json");
  CHECK(c.simulation.compute_slowdown == doctest::Approx(24.0 / (108 - 24)).epsilon(1e-15));
  CHECK(c.simulation.compute_slowdown_basis == "NCCL's 24 channels hold 24 of 108 SMs");
  doc["cluster"] = Json{{"preset", "hgx-h800"}};
  c = parse_config(doc, "exp.json");
  CHECK(c.simulation.compute_slowdown == doctest::Approx(16.0 / (132 - 16)).epsilon(1e-15));
  // A preset without a published channel count keeps the uncalibrated default; so does no cluster.
  doc["cluster"] = Json{{"preset", "dgx-h100"}};
  c = parse_config(doc, "exp.json");
  CHECK(c.simulation.compute_slowdown == 0.1);
  CHECK(c.simulation.compute_slowdown_basis == "default, uncalibrated");
  CHECK(parse_config(base(), "exp.json").simulation.compute_slowdown == 0.1);
  // The config's own value wins over the channels.
  doc["cluster"] = Json{{"preset", "dgx-a100"}};
  doc["simulation"] = Json{{"compute_slowdown", 0.5}};
  c = parse_config(doc, "exp.json");
  CHECK(c.simulation.compute_slowdown == 0.5);
  CHECK(c.simulation.compute_slowdown_basis == "simulation.compute_slowdown");
  // A channel count next to the preset replaces it: 54 of 108 SMs → a slowdown of 1.
  doc.erase("simulation");
  doc["cluster"]["tuning"] = Json{{"channels", {{"count", 54}, {"source", "test"}}}};
  CHECK(parse_config(doc, "exp.json").simulation.compute_slowdown == 1.0);
}

TEST_CASE("cluster.tuning.channels errors name the key") {
  check_cases({
      {"zero channels", [](Json& d) {
         d["cluster"] = Json::parse(R"({"preset": "dgx-a100", "tuning": {"channels": {"count": 0, "source": "s"}}})");
       }, "cluster.tuning.channels.count", {"integer in [1, 1024]", "0"}},
      {"a fractional count", [](Json& d) {
         d["cluster"] = Json::parse(R"({"preset": "dgx-a100", "tuning": {"channels": {"count": 2.5, "source": "s"}}})");
       }, "cluster.tuning.channels.count", {"2.5"}},
      {"no source (a preset's count carries its own)", [](Json& d) {
         d["cluster"] = Json::parse(R"({"gpu": "a100-sxm4-80gb", "gpus_per_node": 8, "nodes": 1,
                                        "intra_node": "nvlink3", "tuning": {"channels": {"count": 8}}})");
       }, "cluster.tuning.channels.source", {"NCCL log"}},
      {"not an object", [](Json& d) {
         d["cluster"] = Json::parse(R"({"preset": "dgx-a100", "tuning": {"channels": 8}})");
       }, "cluster.tuning.channels", {"count"}},
      {"every SM taken", [](Json& d) {
         d["cluster"] = Json::parse(R"({"preset": "dgx-a100", "tuning": {"channels": {"count": 108, "source": "s"}}})");
       }, "cluster.tuning.channels.count", {"108 SMs", "simulation.compute_slowdown"}},
  });
}
