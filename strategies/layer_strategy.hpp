// Layer strategies: who owns a transformer layer's parallel form (DESIGN.md §5).
//
// An attention strategy (strategy.hpp) parallelises the attention core over the sequence; a layer
// strategy owns a whole layer: which part of each weight a rank holds, which of the layer's tokens it
// holds, the collectives around the projections, and over which ranks each weight gradient is summed.
// Two are built in:
//   replicated   every weight on every rank, the attention strategy inside, each weight gradient
//                summed over every rank (strategies/layer.hpp: SpLayer);
//   megatron_sp  Megatron tensor parallelism over a TP group, with or without sequence parallelism,
//                the attention strategy as the context-parallel level (strategies/megatron/).
//
// The world is TP × CP × DP, TP innermost (Megatron-Core's rank order): world rank r is TP rank
// r mod T of the CP rank ⌊r/T⌋ mod C of data-parallel replica ⌊r/(T·C)⌋, so a TP group holds
// consecutive GPUs (one node when it fits) and a CP group strides by T.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

// Tensors by name, in a fixed order.
struct NamedTensors {
  std::vector<std::string> names;
  std::vector<rt::Tensor> tensors;
  [[nodiscard]] const rt::Tensor& at(const std::string& name) const;
  [[nodiscard]] rt::Tensor& at(const std::string& name);
  void add(std::string name, rt::Tensor t);
  // Zero-filled tensors of the same names and shapes on `dev` (a layer's weight gradients).
  [[nodiscard]] NamedTensors zeros_like(rt::Device& dev) const;
};

// The part of one layer parameter (layer_param_shapes: name and whole shape) a rank holds: the whole
// tensor (dim = −1) or the slice [start, start + len) along `dim`. Its gradient is summed over the
// world ranks whose TP rank has the same `reduce_color` (every CP and DP rank of those): the ranks
// that hold the same slice and each computed a part of its gradient.
struct ParamShard {
  std::string name;
  rt::Shape whole;
  int dim = -1;
  std::int64_t start = 0, len = 0;
  int reduce_color = 0;
  [[nodiscard]] rt::Shape local() const;
  // The slice's values out of the whole tensor's (row-major), and back into it.
  [[nodiscard]] std::vector<double> take(const std::vector<double>& whole_values) const;
  void put(const std::vector<double>& local_values, std::vector<double>& whole_values) const;
};

// Where a layer hands each weight gradient the moment its backward has finished it; the gradient is
// summed over its ParamShard's group once the step's reduction finishes (strategies/step.hpp).
class GradSink {
 public:
  virtual ~GradSink() = default;
  virtual void ready(const std::string& param, rt::Tensor grad) = 0;
};

struct LayerGrads {
  rt::Tensor dx;         // the gradient of the layer's input, rows as the input's
  NamedTensors weights;  // this rank's shards, same names as the parameters
};

class LayerStrategy {
 public:
  virtual ~LayerStrategy() = default;
  // x, y: [B, rows, hidden] (LayerInfo::sequence_first: [rows, B, hidden]), the rows at the rank's
  // layer positions (LayerInfo::rows).
  [[nodiscard]] virtual rt::Tensor forward(const rt::Tensor& x) = 0;
  [[nodiscard]] virtual LayerGrads backward(const rt::Tensor& dy, GradSink& sink) = 0;
  // Drops everything forward kept for backward (activation recomputation: the step keeps the layer's
  // input and runs forward again just before backward).
  virtual void forget() = 0;
};

// What one rank's layer is built from.
struct LayerSetup {
  rt::Device& dev;
  rt::Comm* tp;                          // the tensor-parallel group; nullptr when T = 1
  models::AttnProblem attention_problem;  // the rank's heads (LayerInfo::attention_problem)
  // The attention strategy over the CP group on those heads, at the CP rank's positions.
  std::unique_ptr<AttentionStrategy> attention;
  models::ModelSpec model;
  Options options;  // the layer strategy's, complete
  // Random draws (dropout masks): `seed` differs by rank and layer; `replicated_seed` by layer and by CP
  // and DP rank but not by TP rank, for activations the TP group holds alike (Megatron-LM draws those
  // from one generator state on every TP rank, so the replicas stay equal).
  std::uint64_t seed = 0, replicated_seed = 0;
};

// A tensor-parallel layout of the world.
struct ParallelShape {
  int tp = 1, cp = 1, dp = 1;
  [[nodiscard]] int world() const { return tp * cp * dp; }
  [[nodiscard]] int tp_rank(int r) const { return r % tp; }
  [[nodiscard]] int cp_rank(int r) const { return (r / tp) % cp; }
  [[nodiscard]] int dp_rank(int r) const { return r / (tp * cp); }
};

// Why a layout cannot run: the config key at fault (parallel.tp, workload.seq_len, …) and the reason.
struct Refusal {
  std::string where, why;
};

struct LayerInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Activations token-major, [rows, B, hidden] (Megatron's [s, b, h]: a TP rank's share of the
  // sequence is then one contiguous block, so the sequence-parallel collectives need no staging
  // copies); else [B, rows, hidden].
  bool sequence_first = false;
  // Why the model cannot run at this layout with these options, or nullopt (`problem`: the whole
  // attention problem).
  std::function<std::optional<Refusal>(const models::ModelSpec&, const models::AttnProblem&,
                                       const ParallelShape&, const Options&)>
      check;
  // The attention problem a TP rank's attention strategy solves (its heads; the sequence unchanged).
  std::function<models::AttnProblem(const models::AttnProblem&, int tp, const Options&)> attention_problem;
  // The parameter shards of TP rank `t` of `tp`.
  std::function<std::vector<ParamShard>(const models::ModelSpec&, int t, int tp, const Options&)> params;
  // The layer input rows TP rank `t` holds, out of its CP rank's `positions`.
  std::function<rt::Positions(const rt::Positions& positions, int t, int tp, const Options&)> rows;
  std::function<std::unique_ptr<LayerStrategy>(LayerSetup, NamedTensors params)> create;
};

// The built-in layer strategies, and one by name (nullptr if unknown).
[[nodiscard]] const std::vector<LayerInfo>& layer_strategies();
[[nodiscard]] const LayerInfo* find_layer_strategy(const std::string& name);
[[nodiscard]] std::vector<std::string> layer_strategy_names();
// Defaults filled in, every option checked (InputError naming `where` + ".<option>").
[[nodiscard]] Options complete_layer_options(const LayerInfo& info, const Options& given,
                                             const std::string& where);

}  // namespace spsim::strategies
