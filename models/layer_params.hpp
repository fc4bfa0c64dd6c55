// LayerParams: the named parameter tensors of one pre-LN transformer layer (and their gradients).
//
// The same container holds parameters and parameter gradients (same names, same shapes), so a
// gradient check can walk both in lockstep. Order and names are fixed (kLayerParamNames); every
// implementation of the layer — the float64 reference (models/reference.hpp) and the distributed
// strategies — uses exactly these names, shapes and the nn.Linear convention y = x Wᵀ + b:
//
//   name         shape                 role
//   ln1.gamma    [hidden]              LayerNorm before attention (scale)
//   ln1.beta     [hidden]              LayerNorm before attention (shift)
//   wq, bq       [H*D, hidden], [H*D]  query projection   (H = heads, D = head_dim)
//   wk, bk       [Hkv*D, hidden], [Hkv*D]  key projection (Hkv = kv_heads)
//   wv, bv       [Hkv*D, hidden], [Hkv*D]  value projection
//   wo, bo       [hidden, H*D], [hidden]   attention output projection
//   ln2.gamma    [hidden]              LayerNorm before the MLP (scale)
//   ln2.beta     [hidden]              LayerNorm before the MLP (shift)
//   w1, b1       [ffn, hidden], [ffn]  MLP up projection (ffn = ffn_hidden); SwiGLU: the gate
//   w3, b3       [ffn, hidden], [ffn]  SwiGLU only: the up projection the gate multiplies
//   w2, b2       [hidden, ffn], [hidden]   MLP down projection
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/spec.hpp"
#include "runtime/tensor.hpp"

namespace spsim::models {

inline constexpr std::array<std::string_view, 16> kLayerParamNames = {
    "ln1.gamma", "ln1.beta", "wq",        "bq",       "wk", "bk", "wv", "bv",
    "wo",        "bo",       "ln2.gamma", "ln2.beta", "w1", "b1", "w2", "b2"};
// A SwiGLU layer's names: kLayerParamNames with w3, b3 after b1.
inline constexpr std::array<std::string_view, 18> kSwigluLayerParamNames = {
    "ln1.gamma", "ln1.beta", "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "ln2.gamma", "ln2.beta",
    "w1",        "b1",       "w3", "b3", "w2", "b2"};

// One named, row-major tensor of doubles.
struct NamedTensor {
  std::string name;
  rt::Shape shape;
  std::vector<double> data;  // numel(shape) values, row-major

  [[nodiscard]] std::int64_t numel() const { return rt::numel(shape); }
};

struct LayerParams {
  std::vector<NamedTensor> tensors;  // in kLayerParamNames order (kSwigluLayerParamNames for SwiGLU)

  // Throws std::out_of_range naming the unknown name and the valid ones.
  [[nodiscard]] const NamedTensor& at(std::string_view name) const;
  [[nodiscard]] NamedTensor& at(std::string_view name);
  [[nodiscard]] std::int64_t numel() const;  // all tensors together
};

// Throws InputError("model.<field>", ...) unless every dimension is positive and heads % kv_heads == 0.
void check_layer_spec(const ModelSpec& spec);

// All 16 tensors (18 for SwiGLU) with their shapes from `spec`, filled with zeros (also the shape of a
// gradient set).
[[nodiscard]] LayerParams make_layer_params(const ModelSpec& spec);

// Deterministic initialisation: tensor i draws from SplitMix64(derive_seed(seed, i)) (models/random.hpp).
//   weights [out, in]: N(0, 1/in)      (fan-in scaling keeps activations O(1) through the layer)
//   LayerNorm gamma:   1 + N(0, 0.1²)  (near identity, but not exactly 1, so dgamma matters)
//   LayerNorm beta and all biases: N(0, 0.1²)  (small, non-zero, so their gradients are exercised)
void randomize(LayerParams& params, std::uint64_t seed);

}  // namespace spsim::models
