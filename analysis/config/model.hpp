// The config's `model` section: presets (configs/models/<name>.json), Hugging Face config.json files
// and explicit dimensions, merged in that order (explicit fields override the preset or HF file).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/config/json_reader.hpp"
#include "models/spec.hpp"

namespace spsim::analysis {

// Names of the model presets found in configs/models (analysis/config/files.hpp), sorted.
[[nodiscard]] std::vector<std::string> model_preset_names();

// Reads the `model` object at path "model". Relative hf_config paths resolve against `base_dir`.
// Defaults: kv_heads = heads, head_dim = hidden / heads, ffn_hidden = 4 * hidden, layers = 1, vocab = 0.
// head_dim is left 0 when not given and hidden % heads != 0; check_model reports that, so a sweep can
// show it as the reason a point is invalid.
[[nodiscard]] models::ModelSpec parse_model(const JsonObject& model, const std::filesystem::path& base_dir);
// Cross-field checks: head_dim derivable, heads divisible by kv_heads. Throws InputError at "model.<key>".
void check_model(const models::ModelSpec& model);

// A preset by name (InputError at "model.preset" listing the presets if unknown).
[[nodiscard]] models::ModelSpec load_model_preset(const std::string& name);

}  // namespace spsim::analysis
