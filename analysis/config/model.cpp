// The config's `model` section: presets, Hugging Face config.json files and explicit dimensions.
#include "analysis/config/model.hpp"

#include <algorithm>
#include <optional>
#include <system_error>

#include "analysis/config/files.hpp"
#include "analysis/config/schema.hpp"
#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace fs = std::filesystem;

namespace {

// Dimensions gathered from the preset / HF file / explicit keys before defaults are applied.
struct ModelFields {
  std::string name = "custom";
  std::optional<std::int64_t> hidden, heads, kv_heads, head_dim, ffn_hidden, layers, vocab;
  std::optional<models::Mlp> mlp;
  std::optional<double> attention_dropout, hidden_dropout;
};

// attention_dropout / hidden_dropout of a preset file or the config's model section: a probability.
void read_dropout(const JsonObject& obj, ModelFields& fields) {
  for (const auto& key : schema::dropout_keys) {
    if (!obj.has(key)) continue;
    (key == "attention_dropout" ? fields.attention_dropout : fields.hidden_dropout) =
        expect_probability(obj.at(key), obj.path(key));
  }
}

// `mlp` of a preset file or the config's model section.
void read_mlp(const JsonObject& obj, ModelFields& fields) {
  if (obj.has("mlp"))
    fields.mlp = obj.choice_or("mlp", schema::mlp_kinds, "gelu") == "swiglu" ? models::Mlp::swiglu : models::Mlp::gelu;
}

using FieldPtr = std::optional<std::int64_t> ModelFields::*;

FieldPtr field_of(const std::string& key) {
  if (key == "hidden") return &ModelFields::hidden;
  if (key == "heads") return &ModelFields::heads;
  if (key == "kv_heads") return &ModelFields::kv_heads;
  if (key == "head_dim") return &ModelFields::head_dim;
  if (key == "ffn_hidden") return &ModelFields::ffn_hidden;
  if (key == "layers") return &ModelFields::layers;
  return &ModelFields::vocab;
}

// Overrides `fields` with every model dimension present in `obj` (preset file or the config's model).
void read_dims(const JsonObject& obj, ModelFields& fields) {
  for (const auto& dim : schema::model_dims)
    if (obj.has(dim.key)) fields.*field_of(dim.key) = obj.integer(dim.key, dim.min);
  read_mlp(obj, fields);
  read_dropout(obj, fields);
}

// Hugging Face key -> our field. Llama/BERT-style names first, GPT-2-style names as a fallback.
struct HfKey {
  const char* hf;
  const char* ours;
  std::int64_t min;
};
const std::vector<HfKey> hf_keys = {
    {"hidden_size", "hidden", 1},
    {"num_attention_heads", "heads", 1},
    {"num_key_value_heads", "kv_heads", 1},
    {"head_dim", "head_dim", 1},
    {"intermediate_size", "ffn_hidden", 1},
    {"num_hidden_layers", "layers", 1},
    {"vocab_size", "vocab", 0},
    {"n_embd", "hidden", 1},
    {"n_head", "heads", 1},
    {"n_inner", "ffn_hidden", 1},
    {"n_layer", "layers", 1},
};

ModelFields read_hf_config(const JsonObject& model, const fs::path& base_dir) {
  const std::string where = model.path("hf_config");
  const fs::path given = model.string("hf_config");
  const fs::path file = given.is_absolute() ? given : base_dir / given;
  const Json doc = read_json_file(file, where);
  if (!doc.is_object()) throw InputError(where, "'" + file.string() + "' is not a JSON object");
  ModelFields fields;
  const fs::path folder = file.parent_path().filename();
  fields.name = folder.empty() ? "hf_config" : folder.string();
  for (const auto& key : hf_keys) {
    auto it = doc.find(key.hf);
    FieldPtr field = field_of(key.ours);
    if (it == doc.end() || it->is_null() || (fields.*field).has_value())
      continue;  // null: "not set" in HF files
    fields.*field = expect_integer(*it, file.string() + ":" + key.hf, key.min);
  }
  if (!fields.hidden || !fields.heads)
    throw InputError(where,
                     "'" + file.string() +
                         "' has no hidden_size / num_attention_heads; is it a Hugging Face model config?");
  // Llama-style configs (hidden_act silu / swish) gate their MLP with a third projection: SwiGLU.
  if (auto it = doc.find("hidden_act"); it != doc.end() && it->is_string()) {
    const std::string act = it->get<std::string>();
    if (act == "silu" || act == "swish") fields.mlp = models::Mlp::swiglu;
  }
  return fields;
}

bool plausible_preset_name(const std::string& name) {
  return !name.empty() && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

ModelFields read_preset(const std::string& name, const std::string& where) {
  const auto names = model_preset_names();
  if (!plausible_preset_name(name) || std::find(names.begin(), names.end(), name) == names.end()) {
    const std::string listing =
        names.empty() ? "(none found in " + (config_dir() / "models").string() + ")" : join_names(names);
    throw InputError(where, "unknown model preset '" + name + "'; valid presets: " + listing);
  }
  const fs::path file = config_dir() / "models" / (name + ".json");
  const Json doc = read_json_file(file, where);
  std::vector<std::string> allowed = {"source", "mlp", "attention_dropout", "hidden_dropout"};
  for (const auto& dim : schema::model_dims) allowed.emplace_back(dim.key);
  const JsonObject obj(doc, file.string() + ":", allowed);
  (void)obj.string("source");  // every preset says where its numbers come from
  ModelFields fields;
  fields.name = name;
  read_dims(obj, fields);
  return fields;
}

models::ModelSpec finish(const ModelFields& f) {
  if (!f.hidden)
    throw InputError("model.hidden",
                     "missing required key 'hidden' (give model.preset, model.hf_config or model.hidden)");
  if (!f.heads)
    throw InputError("model.heads",
                     "missing required key 'heads' (give model.preset, model.hf_config or model.heads)");
  models::ModelSpec m;
  m.name = f.name;
  m.hidden = *f.hidden;
  m.heads = *f.heads;
  m.kv_heads = f.kv_heads.value_or(m.heads);
  m.head_dim = f.head_dim.value_or(m.hidden % m.heads == 0 ? m.hidden / m.heads : 0);
  m.ffn_hidden = f.ffn_hidden.value_or(4 * m.hidden);
  m.layers = f.layers.value_or(1);
  m.vocab = f.vocab.value_or(0);
  m.mlp = f.mlp.value_or(models::Mlp::gelu);
  m.attention_dropout = f.attention_dropout.value_or(0);
  m.hidden_dropout = f.hidden_dropout.value_or(0);
  return m;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  return list_configs("models");
}

models::ModelSpec parse_model(const JsonObject& model, const fs::path& base_dir) {
  if (model.has("preset") && model.has("hf_config"))
    throw InputError(model.path("hf_config"), "give either model.preset or model.hf_config, not both");
  ModelFields fields;
  if (model.has("preset")) fields = read_preset(model.string("preset"), model.path("preset"));
  if (model.has("hf_config")) fields = read_hf_config(model, base_dir);
  read_dims(model, fields);
  return finish(fields);
}

void check_model(const models::ModelSpec& m) {
  if (m.head_dim == 0)
    throw InputError("model.head_dim", "hidden " + std::to_string(m.hidden) + " is not divisible by heads " +
                                           std::to_string(m.heads) + "; give model.head_dim explicitly");
  if (m.heads % m.kv_heads != 0)
    throw InputError("model.kv_heads", "heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                                           std::to_string(m.kv_heads) +
                                           " (each KV head serves heads/kv_heads query heads)");
}

models::ModelSpec load_model_preset(const std::string& name) {
  auto spec = finish(read_preset(name, "model.preset"));
  check_model(spec);
  return spec;
}

}  // namespace spsim::analysis
