// Step: the one training-step program every backend runs on every rank: `check` (threads ranks, real
// data), `simulate` (trace ranks, no data) and `run` (MPI or NCCL ranks, timed).
//
// Per workload.scope:
//  * attention: the strategy's attention core on this rank's shard of q, k, v ([B·H, n, d],
//    [B·Hkv, n, d], n = the rank's tokens) and, in backward, of the upstream gradient dO;
//  * layer: one SpLayer (strategies/layer.hpp) with replicated weights, input x and upstream dY
//    [B, n, hidden];
//  * model: model.layers SpLayers one after another (forward in order, backward in reverse, every
//    layer's activations kept for its backward, as training without recomputation does), and the rest
//    of the model state (16 bytes per parameter: bf16 weights and gradients, fp32 master weights and
//    Adam moments, embeddings included, no ZeRO) held as one allocation; no embedding or LM head ops.
// The world is `dp` replicas of the SP group: world rank r is rank r % degree of SP group r / degree,
// so an SP group occupies consecutive GPUs (one node when it fits). The strategy runs on the SP group;
// layer and model scopes sum each weight gradient over the whole world (SP × DP, every rank that used
// the replicated weight) in DDP buckets of `bucket_bytes` that overlap backward
// (strategies/grad_buckets.hpp), waited for at the end of backward.
//
// Inputs are made, in this order, by the caller's StepData (real shards for check and run, data-less
// tensors for the trace) before the step: attention q, k, v, dO; layer/model every layer's weights,
// then the model state, x and dY. forward() and backward() bracket their ops in the phases "forward"
// and "backward".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strategies/layer.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

enum class StepInput : std::uint8_t { q, k, v, d_o, x, d_y };

struct StepData {
  // This rank's shard of an input, `local_shape` [a, n, c] with row i the token at positions[i].
  std::function<rt::Tensor(StepInput which, const rt::Shape& local_shape,
                           const std::vector<std::int64_t>& positions)>
      input;
  // A weight of layer `layer` (replicated: the whole tensor), by its layer_param_shapes name.
  std::function<rt::Tensor(int layer, const std::string& name, const rt::Shape& shape)> weight;
  // The model state beyond the traced layers (scope model): `elements` of the workload dtype.
  std::function<rt::Tensor(std::int64_t elements)> model_state;
};

class Step {
 public:
  // Makes the inputs (StepData) and the strategy. `world` has degree × dp ranks.
  Step(const StepConfig& config, const StrategyInfo& info, rt::Device& dev, rt::Comm& world,
       const StepData& data);
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  void forward();
  // Requires forward(); the weight gradients are summed over the world when it returns.
  void backward();

  // Global token positions of this rank's rows (its SP rank's share of the sequence layout).
  [[nodiscard]] const std::vector<std::int64_t>& positions() const { return positions_; }
  // Attention: O, then dQ, dK, dV after backward. Layer and model: Y, then dX (of the first layer).
  [[nodiscard]] const std::vector<rt::Tensor>& outputs() const { return outputs_; }
  // The first layer's weight gradients (layer and model scope, after backward).
  [[nodiscard]] const NamedTensors& weight_grads() const;

 private:
  [[nodiscard]] bool attention_scope() const { return config_.workload.scope == models::Scope::attention; }
  [[nodiscard]] StrategyContext context();
  void make_attention(const StepData& data);
  void make_layers(const StepData& data);

  const StepConfig& config_;
  const StrategyInfo& info_;
  rt::Device& dev_;
  rt::Comm& world_;
  std::unique_ptr<rt::Comm> sp_;  // the SP group when dp > 1
  rt::Comm& comm_;                // the SP group the strategy runs on
  models::AttnProblem problem_;
  std::vector<std::int64_t> positions_;
  std::vector<rt::Tensor> inputs_;  // attention q, k, v, dO (kept); layer x, dY (released when used)
  rt::Tensor model_state_;
  std::unique_ptr<AttentionStrategy> attention_;
  std::vector<std::unique_ptr<SpLayer>> layers_;
  std::vector<rt::Tensor> outputs_;
  std::vector<LayerGrads> grads_;  // weight gradients live until the step ends (last layer first)
};

}  // namespace spsim::strategies
