// The model section: shipped presets, preset + explicit overrides, Hugging Face config.json files,
// and the SPSIM_CONFIG_DIR override.
#include "analysis/config/model.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include "analysis/config/config.hpp"
#include "analysis/config/document.hpp"
#include "tests/support/helpers.hpp"

using spsim::analysis::Json;
using spsim::analysis::load_model_preset;
using spsim::analysis::parse_config;
using spsim::models::ModelSpec;
using spsim::test::contains;
using spsim::test::input_error_of;

namespace {

Json with_model(const Json& model) {
  Json doc = Json::parse(R"({ "schema_version": 1, "workload": { "seq_len": 4096 },
                              "strategy": { "name": "rsa", "degree": 8 } })");
  doc["model"] = model;
  return doc;
}

void check_same_dims(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.hidden == b.hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.layers == b.layers);
  CHECK(a.vocab == b.vocab);
}

// Sets an environment variable for one scope (tests run on one thread).
class EnvOverride {
 public:
  EnvOverride(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~EnvOverride() { unsetenv(name_); }
  EnvOverride(const EnvOverride&) = delete;
  EnvOverride& operator=(const EnvOverride&) = delete;

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("the shipped presets hold the published dimensions") {
  struct Published {
    std::string name;
    ModelSpec dims;  // from the sources cited in each preset's "source" field
  };
  const std::vector<Published> published = {
      // BERT paper: L=24, H=1024, A=16, FFN 4H; WordPiece vocab 30522.
      {"bert-large", {"", 1024, 16, 16, 64, 4096, 24, 30522}},
      // GPT-3 paper Table 2.1 XL: 24 layers, d_model 2048, d_head 128 (16 heads, see the preset's note).
      {"gpt3-1.3b", {"", 2048, 16, 16, 128, 8192, 24, 50257}},
      // Llama 2 7B HF config: 4096 / 32 heads / 11008 / 32 layers / 32000.
      {"llama2-7b", {"", 4096, 32, 32, 128, 11008, 32, 32000}},
      // Llama 3 paper Table 3 + HF config: 8B 4096 / 32 q / 8 kv / 14336 / 32; 70B 8192 / 64 / 8 / 28672
      // / 80.
      {"llama3-8b", {"", 4096, 32, 8, 128, 14336, 32, 128256}},
      {"llama3-70b", {"", 8192, 64, 8, 128, 28672, 80, 128256}},
  };
  const auto names = spsim::analysis::model_preset_names();
  for (const auto& p : published) {
    CAPTURE(p.name);
    CHECK(std::find(names.begin(), names.end(), p.name) != names.end());
    const auto spec = load_model_preset(p.name);
    CHECK(spec.name == p.name);
    check_same_dims(spec, p.dims);
    // Every preset is self-consistent: heads x head_dim = hidden.
    CHECK(spec.heads * spec.head_dim == spec.hidden);
  }
}

TEST_CASE("explicit fields override the preset's") {
  const auto c =
      parse_config(with_model(Json::parse(R"({ "preset": "llama2-7b", "kv_heads": 8, "layers": 2 })")), "");
  auto expected = load_model_preset("llama2-7b");
  expected.kv_heads = 8;
  expected.layers = 2;
  check_same_dims(c.model, expected);
  CHECK(c.model.name == "llama2-7b");
}

TEST_CASE("an unknown preset lists the presets") {
  for (const std::string bad : {"gpt5", "../models/llama2-7b", ""}) {
    CAPTURE(bad);
    const auto err = input_error_of([&] { (void)parse_config(with_model(Json{{"preset", bad}}), ""); });
    REQUIRE(err.has_value());
    CHECK(err->where() == "model.preset");
    CHECK(contains(err->what(), "'" + bad + "'"));
    for (const auto& name : spsim::analysis::model_preset_names()) CHECK(contains(err->what(), name));
  }
}

TEST_CASE("preset and hf_config together are an error") {
  const auto err = input_error_of([] {
    (void)parse_config(with_model(Json::parse(R"({ "preset": "bert-large", "hf_config": "c.json" })")), "");
  });
  REQUIRE(err.has_value());
  CHECK(err->where() == "model.hf_config");
}

TEST_CASE("a model needs hidden and heads from somewhere") {
  const auto err =
      input_error_of([] { (void)parse_config(with_model(Json::parse(R"({ "heads": 4 })")), ""); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "model.hidden");
  CHECK(contains(err->what(), "preset"));
}

TEST_CASE("a Hugging Face config gives the same ModelSpec as the equivalent preset") {
  spsim::test::TempDir dir;
  // The llama3-8b numbers as Meta's config.json spells them, with keys spsim ignores.
  const std::string hf = R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "num_hidden_layers": 32, "vocab_size": 128256, "rope_theta": 500000.0, "torch_dtype": "bfloat16"
  })";
  spsim::test::write_file(dir.path() / "Meta-Llama-3-8B" / "config.json", hf);
  const auto exp = dir.path() / "exp.json";
  spsim::test::write_file(exp, with_model(Json{{"hf_config", "Meta-Llama-3-8B/config.json"}}).dump());
  const auto c = spsim::analysis::load_config(exp);  // the path resolves against exp.json's folder
  check_same_dims(c.model, load_model_preset("llama3-8b"));
  CHECK(c.model.name == "Meta-Llama-3-8B");

  // head_dim: an explicit value in the HF file wins over hidden / heads; null means "not set".
  Json with_head_dim = Json::parse(hf);
  with_head_dim["head_dim"] = 256;
  spsim::test::write_file(dir.path() / "Meta-Llama-3-8B" / "config.json", with_head_dim.dump());
  CHECK(spsim::analysis::load_config(exp).model.head_dim == 256);
  with_head_dim["head_dim"] = nullptr;
  spsim::test::write_file(dir.path() / "Meta-Llama-3-8B" / "config.json", with_head_dim.dump());
  CHECK(spsim::analysis::load_config(exp).model.head_dim == 4096 / 32);
}

TEST_CASE("Hugging Face config errors") {
  spsim::test::TempDir dir;
  const auto exp = dir.path() / "exp.json";
  spsim::test::write_file(exp, with_model(Json{{"hf_config", "missing/config.json"}}).dump());
  auto err = input_error_of([&] { (void)spsim::analysis::load_config(exp); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "model.hf_config");
  CHECK(contains(err->what(), "missing/config.json"));

  spsim::test::write_file(dir.path() / "bad.json", "{ \"hidden_size\": ");
  spsim::test::write_file(exp, with_model(Json{{"hf_config", "bad.json"}}).dump());
  err = input_error_of([&] { (void)spsim::analysis::load_config(exp); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "model.hf_config");
  CHECK(contains(err->what(), "malformed JSON"));

  spsim::test::write_file(dir.path() / "other.json", R"({ "foo": 1 })");
  spsim::test::write_file(exp, with_model(Json{{"hf_config", "other.json"}}).dump());
  err = input_error_of([&] { (void)spsim::analysis::load_config(exp); });
  REQUIRE(err.has_value());
  CHECK(err->where() == "model.hf_config");
  CHECK(contains(err->what(), "hidden_size"));

  spsim::test::write_file(dir.path() / "typed.json",
                          R"({ "hidden_size": "4096", "num_attention_heads": 32 })");
  spsim::test::write_file(exp, with_model(Json{{"hf_config", "typed.json"}}).dump());
  err = input_error_of([&] { (void)spsim::analysis::load_config(exp); });
  REQUIRE(err.has_value());
  CHECK(contains(err->where(), "hidden_size"));
  CHECK(contains(err->what(), "\"4096\""));
}

TEST_CASE("SPSIM_CONFIG_DIR points the preset lookup elsewhere") {
  spsim::test::TempDir dir;
  spsim::test::write_file(dir.path() / "models" / "tiny.json",
                          R"({ "source": "made up for this test", "hidden": 32, "heads": 2, "layers": 3 })");
  spsim::test::write_file(dir.path() / "models" / "broken.json",
                          R"({ "source": "made up", "hidden": 32, "heads": 2, "colour": "red" })");
  const EnvOverride env("SPSIM_CONFIG_DIR", dir.path().string());
  CHECK(spsim::analysis::model_preset_names() == std::vector<std::string>{"broken", "tiny"});
  const auto tiny = load_model_preset("tiny");
  // Defaults: head_dim = 32 / 2, kv_heads = heads, ffn_hidden = 4 * 32, vocab 0.
  check_same_dims(tiny, {"", 32, 2, 2, 16, 128, 3, 0});
  const auto err = input_error_of([] { (void)load_model_preset("broken"); });
  REQUIRE(err.has_value());
  CHECK(contains(err->where(), "broken.json"));
  CHECK(contains(err->what(), "'colour'"));
  CHECK(contains(err->what(), "source"));
}
