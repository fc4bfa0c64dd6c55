// One pre-LN transformer layer run sequence-parallel on one rank, with a pluggable attention core: the
// `replicated` layer strategy (layer_strategy.hpp).
//
// The layer mirrors models/reference (same parameter names and shapes): x → LN1 → Q/K/V projections →
// attention core (the strategy) → output projection → (dropout →) residual → LN2 → W1 → GeLU (SwiGLU:
// silu(W1) ⊙ W3) → W2 → (dropout →) residual.
// Weights are replicated on every rank; each weight gradient is summed over every rank (the global
// loss is the sum of the ranks' losses): handed to a GradSink the moment it is final, so that its
// reduction overlaps the rest of backward as in DDP (strategies/grad_buckets.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "strategies/layer_strategy.hpp"

namespace spsim::strategies {

// The layer's parameter names and shapes, in the canonical order of models/layer_params.hpp.
struct ParamShape {
  std::string name;
  rt::Shape shape;
};
[[nodiscard]] std::vector<ParamShape> layer_param_shapes(const models::ModelSpec& model);
// Parameters of one layer (the elements of layer_param_shapes).
[[nodiscard]] double layer_params(const models::ModelSpec& model);
// Parameters of the whole model: layers × layer_params + vocab × hidden (embedding).
[[nodiscard]] double model_parameters(const models::ModelSpec& model);

// The residual adds of a layer with hidden dropout (ModelSpec::hidden_dropout = p): y = residual +
// dropout(branch), Megatron-LM's fused bias-dropout-add (the bias is the linear's); a plain add when
// p = 0. The mask (a byte per element) is kept from the forward's add to the backward's branch_grad:
// the gradient into the branch, dropout's backward of dy (dy itself when p = 0). The masks are drawn
// from the layer's seed (LayerSetup), the site (attention 1, MLP 2) and the round, which a finished
// backward advances: a forward run again before its backward (recomputation) draws the same masks.
class HiddenDropout {
 public:
  HiddenDropout(double p, std::uint64_t seed) : p_(p), seed_(seed) {}
  void add(rt::Device& dev, const rt::Tensor& residual, const rt::Tensor& branch, rt::Tensor& y, int site);
  // Releases the site's mask.
  [[nodiscard]] rt::Tensor branch_grad(rt::Device& dev, const rt::Tensor& dy, int site);
  void backward_done() { ++round_; }
  void forget() { masks_ = {}; }

 private:
  [[nodiscard]] std::uint64_t seed(int site) const;
  double p_;
  std::uint64_t seed_;
  std::uint64_t round_ = 0;
  std::array<rt::Tensor, 3> masks_;  // by site
};

// The `replicated` layer strategy (layer_strategy.hpp).
class SpLayer final : public LayerStrategy {
 public:
  // `params` holds every tensor of layer_param_shapes(model) on setup.dev.
  SpLayer(LayerSetup setup, NamedTensors params);
  ~SpLayer() override;

  [[nodiscard]] rt::Tensor forward(const rt::Tensor& x) override;  // x, y: [B, s_local, hidden]
  // Each weight gradient goes to `sink` when final (its reduction is the sink's).
  [[nodiscard]] LayerGrads backward(const rt::Tensor& dy, GradSink& sink) override;
  void forget() override;

 private:
  struct Saved;
  rt::Device& dev_;
  models::ModelSpec model_;
  std::int64_t batch_;
  NamedTensors params_;
  std::unique_ptr<AttentionStrategy> attention_;
  std::unique_ptr<Saved> saved_;
  HiddenDropout dropout_;
};

}  // namespace spsim::strategies
