// Strategy interface and registry: SPMD per-rank code for one sequence-parallel attention scheme.
//
// A strategy is written once against rt::Device and rt::Comm and runs unchanged on every backend
// (cpu+threads for `check`, trace for `simulate`, cpu+mpi and cuda+nccl for `run`).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "runtime/comm.hpp"
#include "runtime/core/positions.hpp"
#include "runtime/device.hpp"
#include "strategies/model/estimate.hpp"
#include "strategies/model/memory.hpp"

namespace spsim::strategies {

// Validated string-valued options ("grad_reduction" -> "reduce_scatter", "layout" -> "zigzag", ...).
using Options = std::map<std::string, std::string>;

struct OptionSpec {
  std::string name;
  std::string description;
  std::vector<std::string> choices;  // empty: any non-negative integer
  std::string default_value;
};

// Everything one rank needs to run the strategy.
struct StrategyContext {
  rt::Device& dev;
  rt::Comm& comm;  // the sequence-parallel group
  models::AttnProblem problem;
  Options options;                      // complete: every option present (defaults filled in)
  rt::Positions positions;  // global token positions of this rank's rows, in local order
  std::uint64_t seed = 0;  // this rank's random draws (dropout masks) in this layer: differs by rank and layer
};

struct AttnGrads {
  rt::Tensor dq, dk, dv;
};

// The attention core on one rank's shard. q: [B*H, s_local, d]; k, v: [B*Hkv, s_local, d] where
// s_local = positions.size() and the rows are the tokens at `positions`. Instances keep what their
// backward needs (as an autograd context) and are used for one forward then one backward.
class AttentionStrategy {
 public:
  virtual ~AttentionStrategy() = default;
  [[nodiscard]] virtual rt::Tensor forward(const rt::Tensor& q, const rt::Tensor& k, const rt::Tensor& v) = 0;
  [[nodiscard]] virtual AttnGrads backward(const rt::Tensor& d_o) = 0;
  // Drops what forward kept for backward (activation recomputation runs forward again before it).
  virtual void forget() = 0;
};

struct LayerInfo;  // layer_strategy.hpp

// What the step program, the closed forms and the memory models read of an experiment: the analysis
// layer's Config seen from the strategy (analysis/closed_form/closed_form.hpp builds it).
struct StepConfig {
  models::ModelSpec model;
  models::Workload workload;
  int degree = 1;                            // the sequence-parallel (context-parallel) group size
  Options options;                           // complete (every option of the strategy, defaults filled in)
  int tp = 1;                                // tensor-parallel group size (layer and model scopes)
  const LayerInfo* layer = nullptr;          // the layer strategy; nullptr: replicated
  Options layer_options;                     // complete
  int dp = 1;                                // data-parallel replicas of the TP × SP group
  bool distributed_optimizer = false;        // optimizer state sharded over the CP × DP ranks (model scope)
  std::uint64_t bucket_bytes = 25ull << 20;  // DDP gradient bucket cap
  double compute_slowdown = 0.1;             // σ: compute runs 1/(1+σ) as fast during communication
};

// A family's closed-form step time (strategies/<family>/closed_form.cpp) and memory model
// (strategies/<family>/memory.cpp); each answers with an estimate or the reason it has none.
using ClosedForm = std::function<Modelled<CostEstimate>(const StepConfig&, const Hardware&)>;
using MemoryModel = std::function<Modelled<MemoryEstimate>(const StepConfig&)>;

// One strategy family, registered in one place (registry.cpp calls each family's register_*).
struct StrategyInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Reason the problem cannot run at this degree with these options, or nullopt.
  std::function<std::optional<std::string>(const models::AttnProblem&, int degree, const Options&)> check;
  // Global token positions held by `rank` (the sequence layout), in local row order.
  std::function<rt::Positions(int rank, int degree, const models::AttnProblem&, const Options&)> positions;
  std::function<std::unique_ptr<AttentionStrategy>(StrategyContext)> create;
  // Applies dropout to the attention probabilities (AttnProblem::dropout): true for an unfused attention
  // that materialises them. A fused (flash) kernel draws its dropout mask inside the kernel, which spsim's
  // kernel model does not cost, so a config with attention dropout is refused for the others.
  bool attention_dropout = false;
  // Exactly one of closed_form / no_closed_form is set (Registry::add checks it): the model, or why
  // the family has none (shown in the comparison table). Likewise memory / no_memory.
  ClosedForm closed_form;
  std::string no_closed_form;
  MemoryModel memory;
  std::string no_memory;
};

class Registry {
 public:
  // Throws std::logic_error for a duplicate name, or a family that registers neither a closed form nor
  // the reason it has none (likewise for the memory model).
  void add(StrategyInfo info);
  [[nodiscard]] const StrategyInfo* find(const std::string& name) const;  // nullptr if unknown
  [[nodiscard]] std::vector<std::string> names() const;
  // Fills defaults and validates every option; throws InputError naming `where` + ".<option>".
  [[nodiscard]] Options complete_options(const StrategyInfo& info, const Options& given,
                                         const std::string& where) const;

 private:
  std::vector<StrategyInfo> infos_;
};

// Fills defaults and validates `given` against `specs` (InputError naming `where` + ".<option>"); `owner`
// says whose options they are in messages ("strategy 'ring'").
[[nodiscard]] Options complete_option_values(const std::vector<OptionSpec>& specs, const Options& given,
                                             const std::string& owner, const std::string& where);

// The built-in strategies (immutable, built on first use).
[[nodiscard]] const Registry& builtin();

}  // namespace spsim::strategies
