// Tracing a config: the per-rank SPMD step (attention core, one layer or a stack of layers) on trace ranks.
#include "analysis/simulate/trace.hpp"

#include <memory>

#include "runtime/core/error.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/layer.hpp"

namespace spsim::analysis {

namespace {

using rt::Tensor;

// One rank's step. Inputs are created first so their allocations precede the forward phase.
//
// The world is `parallel.dp` replicas of the SP group: world rank r is rank r % degree of SP group
// r / degree, so an SP group occupies consecutive GPUs (one node, when it fits) and the replicas are
// spread over nodes. The strategy runs on the SP group; layer and model scopes sum each weight gradient
// over the whole world (SP × DP, every rank that used the replicated weight) in DDP buckets that
// overlap backward (strategies/grad_buckets.hpp), and wait for the last bucket at the end of the step.
class RankStep {
 public:
  RankStep(const Config& cfg, const strategies::StrategyInfo& info, rt::Device& dev, rt::Comm& world)
      : cfg_(cfg),
        info_(info),
        dev_(dev),
        world_(world),
        sp_(split_sp(cfg, world)),
        comm_(sp_ ? *sp_ : world),
        problem_(models::attention_problem(cfg.model, cfg.workload)) {}

  void run() {
    if (cfg_.workload.scope == models::Scope::attention)
      attention();
    else
      layers(cfg_.workload.scope == models::Scope::layer ? 1 : cfg_.model.layers);
  }

 private:
  [[nodiscard]] bool backward() const { return cfg_.workload.passes == models::Passes::fwd_bwd; }

  static std::unique_ptr<rt::Comm> split_sp(const Config& cfg, rt::Comm& world) {
    if (cfg.parallel.dp == 1) return nullptr;
    std::vector<int> color(static_cast<std::size_t>(world.size()));
    for (std::size_t r = 0; r < color.size(); ++r) color[r] = static_cast<int>(r) / cfg.strategy.degree;
    return world.split(color);
  }

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
    // Model scope holds the whole model state (analysis/memory_model.hpp: 16 bytes per parameter,
    // embeddings included) for the step; the layers' weights and gradients are traced tensors, the rest
    // (fp32 master weights, Adam moments, the embedding table and its gradient) is one allocation.
    Tensor model_state;
    if (cfg_.workload.scope == models::Scope::model) {
      const double e = static_cast<double>(rt::dtype_bytes(cfg_.workload.dtype));
      const double traced = (backward() ? 2 : 1) * static_cast<double>(count) * strategies::layer_params(cfg_.model) * e;
      const double rest = 16 * strategies::model_parameters(cfg_.model) - traced;
      if (rest > 0) model_state = input({static_cast<std::int64_t>(rest / e)});
    }
    Tensor x = input({B, n, h});
    Tensor dy = backward() ? input({B, n, h}) : Tensor();
    dev_.begin_phase("forward");
    for (auto& layer : stack) x = layer->forward(x);
    dev_.end_phase("forward");
    if (!backward()) return;
    dev_.begin_phase("backward");
    std::vector<strategies::LayerGrads> grads;  // weight gradients live until the step ends
    strategies::GradBuckets buckets(world_, cfg_.parallel.bucket_bytes());
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      grads.push_back((*it)->backward(dy, &buckets));
      dy = grads.back().dx;
    }
    buckets.finish();
    dev_.end_phase("backward");
  }

  const Config& cfg_;
  const strategies::StrategyInfo& info_;
  rt::Device& dev_;
  rt::Comm& world_;
  std::unique_ptr<rt::Comm> sp_;  // the SP group when dp > 1
  rt::Comm& comm_;                // the SP group the strategy runs on
  models::AttnProblem problem_;
};

}  // namespace

std::vector<rt::trace::RankTrace> trace_config(const Config& config) {
  const auto* info = strategies::builtin().find(config.strategy.name);
  if (!info)
    throw InputError("strategy.name", "unknown strategy '" + config.strategy.name + "'; valid strategies: " +
                                          join_names(strategies::builtin().names()));
  return rt::trace::trace_ranks(
      config.strategy.degree * config.parallel.dp, config.workload.dtype,
      [&](rt::Device& dev, rt::Comm& comm) { RankStep(config, *info, dev, comm).run(); });
}

}  // namespace spsim::analysis
