// Step: the one training-step program every backend runs on every rank: `check` (threads ranks, real
// data), `simulate` (trace ranks, no data) and `run` (MPI or NCCL ranks, timed).
//
// Per workload.scope:
//  * attention: the strategy's attention core on this rank's shard of q, k, v ([B·H, n, d],
//    [B·Hkv, n, d], n = the rank's tokens) and, in backward, of the upstream gradient dO;
//  * layer: one layer of the layer strategy (strategies/layer_strategy.hpp: replicated weights, or
//    Megatron's sharded ones) with input x and upstream dY [B, n, hidden] on the rank's layer rows;
//  * model: model.layers such layers one after another (forward in order, backward in reverse, every
//    layer's activations kept for its backward; with workload.recompute only each layer's input, the
//    layer's forward run again just before its backward, as full activation recomputation does —
//    Chen et al. 2016, Megatron's --recompute-granularity full; layer scope likewise), and the rest
//    of the model state (16 bytes per parameter the rank holds: bf16 weights and gradients, fp32 master
//    weights and Adam moments, its 1/tp of the embedding included; with distributed_optimizer the 12
//    bytes of optimizer state only for 1/(cp × dp) of them, as Megatron's distributed optimizer
//    shards it over the data-parallel ranks with CP; its gradient reduce-scatter and parameter
//    all-gather move the bytes of the all-reduce the step traces) held as one allocation; no embedding
//    or LM head ops.
// The world is TP × SP × DP, TP innermost (strategies/layer_strategy.hpp: ParallelShape): without
// tensor parallelism world rank r is rank r % degree of SP group r / degree, so an SP group occupies
// consecutive GPUs (one node when it fits). The attention strategy runs on the SP (CP) group; layer and
// model scopes sum each weight gradient over the ranks its ParamShard names (replicated weights: the
// whole world) in DDP buckets of `bucket_bytes` per reduction group that overlap backward
// (strategies/grad_buckets.hpp), waited for at the end of backward.
//
// Inputs are made, in this order, by the caller's StepData (real shards for check and run, data-less
// tensors for the trace) before the step: attention q, k, v, dO; layer/model every layer's weight
// shards, then the model state, x and dY. forward() and backward() bracket their ops in the phases
// "forward" and "backward".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strategies/grad_buckets.hpp"
#include "strategies/layer.hpp"
#include "strategies/layer_strategy.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

enum class StepInput : std::uint8_t { q, k, v, d_o, x, d_y };

struct StepData {
  // This rank's shard of an input, `local_shape` [a, n, c] with row i the token at positions[i].
  std::function<rt::Tensor(StepInput which, const rt::Shape& local_shape,
                           const rt::Positions& positions)>
      input;
  // This rank's shard of a weight of layer `layer` (shard.local() elements).
  std::function<rt::Tensor(int layer, const ParamShard& shard)> weight;
  // The model state beyond the traced layers (scope model): `elements` of the workload dtype.
  std::function<rt::Tensor(std::int64_t elements)> model_state;
};

// What the Step of world rank `rank` holds, for callers that load its inputs before building it: the
// global positions of its rows (Step::positions) and its parameter shards (Step::param_shards; layer
// and model scopes).
[[nodiscard]] ParallelShape step_shape(const StepConfig& config);
// Whether the layer-scope inputs (x, dY) and outputs (Y, dX) are token-major, [n, B, hidden]
// (LayerInfo::sequence_first), rather than [B, n, hidden].
[[nodiscard]] bool step_sequence_first(const StepConfig& config);
[[nodiscard]] rt::Positions step_rows(const StepConfig& config, const StrategyInfo& info, int rank);
[[nodiscard]] std::vector<ParamShard> step_shards(const StepConfig& config, int rank);

class Step {
 public:
  // Makes the inputs (StepData) and the strategy. `world` has tp × degree × dp ranks (RuntimeError
  // otherwise).
  Step(const StepConfig& config, const StrategyInfo& info, rt::Device& dev, rt::Comm& world,
       const StepData& data);
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  void forward();
  // Requires forward(); each weight gradient is summed over its ParamShard's group when it returns.
  void backward();

  // Global token positions of this rank's rows: its SP rank's share of the sequence layout (attention
  // scope), of that the layer strategy's rows (layer and model scopes: under sequence parallelism 1/tp).
  [[nodiscard]] const rt::Positions& positions() const { return rows_; }
  // This rank's parameter shards of each layer (layer and model scopes).
  [[nodiscard]] const std::vector<ParamShard>& param_shards() const { return shards_; }
  // Attention: O, then dQ, dK, dV after backward. Layer and model: Y, then dX (of the first layer), in
  // the layout of step_sequence_first.
  [[nodiscard]] const std::vector<rt::Tensor>& outputs() const { return outputs_; }
  // The first layer's weight gradients (layer and model scope, after backward).
  [[nodiscard]] const NamedTensors& weight_grads() const;

 private:
  [[nodiscard]] bool attention_scope() const { return config_.workload.scope == models::Scope::attention; }
  // Full activation recomputation (workload.recompute, layer and model scopes, with a backward).
  [[nodiscard]] bool recompute() const {
    return config_.workload.recompute && !attention_scope() && config_.workload.passes == models::Passes::fwd_bwd;
  }
  [[nodiscard]] StrategyContext context(const models::AttnProblem& problem, std::uint64_t seed);
  void make_attention(const StepData& data);
  void make_layers(const StepData& data);
  void make_grad_groups();

  const StepConfig& config_;
  const StrategyInfo& info_;
  const LayerInfo& layer_;
  ParallelShape shape_;
  rt::Device& dev_;
  rt::Comm& world_;
  std::unique_ptr<rt::Comm> tp_;  // the TP group when tp > 1
  std::unique_ptr<rt::Comm> sp_;  // the SP group when the world holds more than one
  rt::Comm& comm_;                // the SP group the strategy runs on
  models::AttnProblem problem_;
  rt::Positions positions_;  // the SP rank's
  rt::Positions rows_;       // this rank's (positions() above)
  std::vector<ParamShard> shards_;
  // Weight-gradient reduction: per parameter (shards_ order) its group's index in grad_comms_ (nullptr:
  // a shard no other rank holds, nothing to sum).
  std::vector<std::size_t> grad_group_;
  std::vector<rt::Comm*> grad_comms_;
  std::vector<std::unique_ptr<rt::Comm>> owned_comms_;
  std::vector<rt::Tensor> inputs_;  // attention q, k, v, dO (kept); layer x, dY (released when used)
  rt::Tensor model_state_;
  std::unique_ptr<AttentionStrategy> attention_;
  std::vector<std::unique_ptr<LayerStrategy>> layers_;
  std::vector<rt::Tensor> outputs_;
  std::vector<LayerGrads> grads_;        // weight gradients live until the step ends (last layer first)
  std::vector<rt::Tensor> checkpoints_;  // recomputation: each layer's input, until its backward
};

}  // namespace spsim::strategies
