// LayerParams: shapes from a ModelSpec, lookup by name, deterministic initialisation.
#include "models/layer_params.hpp"

#include <cmath>
#include <stdexcept>

#include "models/random.hpp"
#include "runtime/core/error.hpp"

namespace spsim::models {

namespace {

NamedTensor zeros(std::string_view name, rt::Shape shape) {
  const auto n = static_cast<std::size_t>(rt::numel(shape));
  return NamedTensor{std::string(name), std::move(shape), std::vector<double>(n, 0.0)};
}

void require_positive(std::string_view field, std::int64_t value) {
  if (value <= 0) {
    throw InputError("model." + std::string(field),
                     "must be a positive integer, got " + std::to_string(value));
  }
}

[[noreturn]] void unknown_name(std::string_view name, const std::vector<NamedTensor>& tensors) {
  std::string valid;
  for (const NamedTensor& t : tensors) valid += (valid.empty() ? "" : ", ") + t.name;
  throw std::out_of_range("LayerParams: no tensor named '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace

const NamedTensor& LayerParams::at(std::string_view name) const {
  for (const NamedTensor& t : tensors) {
    if (t.name == name) return t;
  }
  unknown_name(name, tensors);
}

NamedTensor& LayerParams::at(std::string_view name) {
  for (NamedTensor& t : tensors) {
    if (t.name == name) return t;
  }
  unknown_name(name, tensors);
}

std::int64_t LayerParams::numel() const {
  std::int64_t total = 0;
  for (const NamedTensor& t : tensors) total += t.numel();
  return total;
}

void check_layer_spec(const ModelSpec& spec) {
  require_positive("hidden", spec.hidden);
  require_positive("heads", spec.heads);
  require_positive("kv_heads", spec.kv_heads);
  require_positive("head_dim", spec.head_dim);
  require_positive("ffn_hidden", spec.ffn_hidden);
  if (spec.heads % spec.kv_heads != 0) {
    throw InputError("model.kv_heads",
                     "heads (" + std::to_string(spec.heads) +
                         ") must be a multiple of kv_heads, got kv_heads = " + std::to_string(spec.kv_heads));
  }
}

LayerParams make_layer_params(const ModelSpec& spec) {
  check_layer_spec(spec);
  const std::int64_t hidden = spec.hidden;
  const std::int64_t q_width = spec.heads * spec.head_dim;
  const std::int64_t kv_width = spec.kv_heads * spec.head_dim;
  const std::int64_t ffn = spec.ffn_hidden;
  LayerParams p;
  p.tensors = {zeros("ln1.gamma", {hidden}),    zeros("ln1.beta", {hidden}),
               zeros("wq", {q_width, hidden}),  zeros("bq", {q_width}),
               zeros("wk", {kv_width, hidden}), zeros("bk", {kv_width}),
               zeros("wv", {kv_width, hidden}), zeros("bv", {kv_width}),
               zeros("wo", {hidden, q_width}),  zeros("bo", {hidden}),
               zeros("ln2.gamma", {hidden}),    zeros("ln2.beta", {hidden}),
               zeros("w1", {ffn, hidden}),      zeros("b1", {ffn})};
  if (spec.mlp == Mlp::swiglu) p.tensors.insert(p.tensors.end(), {zeros("w3", {ffn, hidden}), zeros("b3", {ffn})});
  p.tensors.insert(p.tensors.end(), {zeros("w2", {hidden, ffn}), zeros("b2", {hidden})});
  return p;
}

void randomize(LayerParams& params, std::uint64_t seed) {
  constexpr double small_stddev = 0.1;
  for (std::size_t i = 0; i < params.tensors.size(); ++i) {
    NamedTensor& t = params.tensors[i];
    SplitMix64 rng(derive_seed(seed, i));
    const bool is_gamma = t.name.ends_with(".gamma");
    const bool is_weight = t.shape.size() == 2;
    const double stddev = is_weight ? 1.0 / std::sqrt(static_cast<double>(t.shape[1])) : small_stddev;
    const double mean = is_gamma ? 1.0 : 0.0;
    for (double& value : t.data) value = mean + stddev * rng.next_normal();
  }
}

}  // namespace spsim::models
