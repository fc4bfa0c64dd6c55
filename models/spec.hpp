// Model dimensions and workload shapes: the typed description every layer below the CLI works from.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/mask_bounds.hpp"
#include "runtime/tensor.hpp"

namespace spsim::models {

// The MLP block: GeLU (GPT, BERT: y = W2 GeLU(W1 x)) or SwiGLU (Llama, Mistral: y = W2 (silu(W1 x) ⊙
// W3 x), a third ffn × hidden matrix; Shazeer 2020).
enum class Mlp : std::uint8_t { gelu, swiglu };

// Transformer dimensions (from a preset, explicit fields, or a Hugging Face config.json).
struct ModelSpec {
  std::string name = "custom";
  std::int64_t hidden = 0;      // model width
  std::int64_t heads = 0;       // query heads
  std::int64_t kv_heads = 0;    // key/value heads (== heads for MHA, fewer for GQA)
  std::int64_t head_dim = 0;    // usually hidden / heads
  std::int64_t ffn_hidden = 0;  // MLP inner width
  std::int64_t layers = 1;
  std::int64_t vocab = 0;
  Mlp mlp = Mlp::gelu;
  // Dropout probabilities (Megatron-LM's --attention-dropout and --hidden-dropout; GPT-3-style training
  // uses 0.1 for both, Llama-style 0): on the attention probabilities, and on the attention and MLP
  // outputs before each residual add. 0 = none: no op is launched.
  double attention_dropout = 0;
  double hidden_dropout = 0;
};

enum class Scope : std::uint8_t { attention, layer, model };
enum class Passes : std::uint8_t { fwd, fwd_bwd };

struct Workload {
  std::int64_t seq_len = 0;  // global sequence length (tokens)
  std::int64_t batch = 1;
  rt::DType dtype = rt::DType::bf16;  // element type on the simulated hardware
  bool causal = false;
  rt::MaskBounds bounds = {};  // documents and sliding window (workload.mask), beyond `causal`
  Scope scope = Scope::attention;
  Passes passes = Passes::fwd_bwd;
  // Activation recomputation (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"): keep
  // only each layer's input in forward and recompute the layer before its backward. Used by the layer-
  // and model-scope step (strategies/step.hpp) and RSA's memory model; the attention scope has no layer.
  bool recompute = false;
};

// The attention-core problem a strategy solves: q [B*H, s, d], k/v [B*Hkv, s, d] (global shapes).
struct AttnProblem {
  std::int64_t batch = 1;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t head_dim = 1;
  std::int64_t seq_len = 1;
  bool causal = false;
  rt::MaskBounds bounds = {};  // documents and sliding window on global positions
  double dropout = 0;          // on the attention probabilities (ModelSpec::attention_dropout)
};

[[nodiscard]] inline AttnProblem attention_problem(const ModelSpec& m, const Workload& w) {
  return AttnProblem{w.batch, m.heads, m.kv_heads, m.head_dim, w.seq_len, w.causal, w.bounds, m.attention_dropout};
}

}  // namespace spsim::models
