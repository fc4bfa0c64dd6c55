// One pre-LN transformer layer run sequence-parallel on one rank, with a pluggable attention core.
//
// The layer mirrors models/reference (same parameter names and shapes): x → LN1 → Q/K/V projections →
// attention core (the strategy) → output projection → residual → LN2 → W1 → GeLU → W2 → residual.
// Weights are replicated on every rank; each weight gradient is all-reduced (summed) over the
// sequence-parallel group, since the global loss is the sum of the ranks' losses: at the end of
// backward, or — given GradBuckets — handed over the moment it is final, so that its reduction overlaps
// the rest of backward as in DDP (strategies/grad_buckets.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "strategies/grad_buckets.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// Tensors by name, in a fixed order.
struct NamedTensors {
  std::vector<std::string> names;
  std::vector<rt::Tensor> tensors;
  [[nodiscard]] const rt::Tensor& at(const std::string& name) const;
  [[nodiscard]] rt::Tensor& at(const std::string& name);
  void add(std::string name, rt::Tensor t);
};

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

struct LayerGrads {
  rt::Tensor dx;         // [B, s_local, hidden]
  NamedTensors weights;  // same names as the parameters; summed over the group (see backward)
};

class SpLayer {
 public:
  // `params` holds every tensor of layer_param_shapes(model) on ctx.dev.
  SpLayer(StrategyContext ctx, const StrategyInfo& info, const models::ModelSpec& model, NamedTensors params);
  ~SpLayer();

  [[nodiscard]] rt::Tensor forward(const rt::Tensor& x);  // x, y: [B, s_local, hidden]
  // Without `buckets` the weight gradients are summed over the layer's group before it returns; with
  // them, each is handed to buckets->ready() when final and is summed once buckets->finish() returns.
  [[nodiscard]] LayerGrads backward(const rt::Tensor& dy, GradBuckets* buckets = nullptr);

 private:
  struct Saved;
  rt::Device& dev_;
  rt::Comm& comm_;
  models::ModelSpec model_;
  std::int64_t batch_;
  NamedTensors params_;
  std::unique_ptr<AttentionStrategy> attention_;
  std::unique_ptr<Saved> saved_;
};

}  // namespace spsim::strategies
