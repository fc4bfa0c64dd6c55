// Tracing a config: the per-rank SPMD step (attention core, one layer or a stack of layers) on trace ranks.
#include "analysis/sim_trace.hpp"

#include <memory>

#include "runtime/error.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/layer.hpp"

namespace spsim::analysis {

namespace {

using rt::Tensor;

// One rank's step. Inputs are created first so their allocations precede the forward phase.
class RankStep {
 public:
  RankStep(const Config& cfg, const strategies::StrategyInfo& info, rt::Device& dev, rt::Comm& comm)
      : cfg_(cfg),
        info_(info),
        dev_(dev),
        comm_(comm),
        problem_(models::attention_problem(cfg.model, cfg.workload)) {}

  void run() {
    if (cfg_.workload.scope == models::Scope::attention)
      attention();
    else
      layers(cfg_.workload.scope == models::Scope::layer ? 1 : cfg_.model.layers);
  }

 private:
  [[nodiscard]] bool backward() const { return cfg_.workload.passes == models::Passes::fwd_bwd; }

  strategies::StrategyContext context() {
    auto pos = info_.positions(comm_.rank(), comm_.size(), problem_.seq_len, cfg_.strategy.options);
    return strategies::StrategyContext{dev_, comm_, problem_, cfg_.strategy.options, std::move(pos)};
  }

  [[nodiscard]] std::int64_t local_rows() {
    return static_cast<std::int64_t>(
        info_.positions(comm_.rank(), comm_.size(), problem_.seq_len, cfg_.strategy.options).size());
  }

  Tensor input(const rt::Shape& shape) { return dev_.from_host({}, shape); }

  void attention() {
    const auto& p = problem_;
    const std::int64_t n = local_rows(), bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, d = p.head_dim;
    Tensor q = input({bh, n, d}), k = input({bkv, n, d}), v = input({bkv, n, d});
    Tensor d_o = backward() ? input({bh, n, d}) : Tensor();
    auto strategy = info_.create(context());
    dev_.begin_phase("forward");
    Tensor o = strategy->forward(q, k, v);
    dev_.end_phase("forward");
    if (!backward()) return;
    dev_.begin_phase("backward");
    auto grads = strategy->backward(d_o);
    dev_.end_phase("backward");
  }

  void layers(std::int64_t count) {
    const auto shapes = strategies::layer_param_shapes(cfg_.model);
    const std::int64_t n = local_rows(), B = problem_.batch, h = cfg_.model.hidden;
    std::vector<std::unique_ptr<strategies::SpLayer>> stack;
    for (std::int64_t l = 0; l < count; ++l) {
      strategies::NamedTensors weights;
      for (const auto& ps : shapes) weights.add(ps.name, input(ps.shape));
      stack.push_back(
          std::make_unique<strategies::SpLayer>(context(), info_, cfg_.model, std::move(weights)));
    }
    Tensor x = input({B, n, h});
    Tensor dy = backward() ? input({B, n, h}) : Tensor();
    dev_.begin_phase("forward");
    for (auto& layer : stack) x = layer->forward(x);
    dev_.end_phase("forward");
    if (!backward()) return;
    dev_.begin_phase("backward");
    std::vector<strategies::LayerGrads> grads;  // weight gradients live until the step ends
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      grads.push_back((*it)->backward(dy));
      dy = grads.back().dx;
    }
    dev_.end_phase("backward");
  }

  const Config& cfg_;
  const strategies::StrategyInfo& info_;
  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem problem_;
};

}  // namespace

std::vector<rt::trace::RankTrace> trace_config(const Config& config) {
  const auto* info = strategies::builtin().find(config.strategy.name);
  if (!info)
    throw InputError("strategy.name", "unknown strategy '" + config.strategy.name + "'; valid strategies: " +
                                          join_names(strategies::builtin().names()));
  return rt::trace::trace_ranks(
      config.strategy.degree, config.workload.dtype,
      [&](rt::Device& dev, rt::Comm& comm) { RankStep(config, *info, dev, comm).run(); });
}

}  // namespace spsim::analysis
