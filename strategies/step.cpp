// The training step of one rank: inputs, forward, backward and the weight-gradient reduction.
#include "strategies/step.hpp"

#include "strategies/grad_buckets.hpp"

namespace spsim::strategies {

namespace {

std::unique_ptr<rt::Comm> split_sp(const StepConfig& cfg, rt::Comm& world) {
  if (cfg.dp == 1) return nullptr;
  std::vector<int> color(static_cast<std::size_t>(world.size()));
  for (std::size_t r = 0; r < color.size(); ++r) color[r] = static_cast<int>(r) / cfg.degree;
  return world.split(color);
}

}  // namespace

Step::Step(const StepConfig& config, const StrategyInfo& info, rt::Device& dev, rt::Comm& world,
           const StepData& data)
    : config_(config),
      info_(info),
      dev_(dev),
      world_(world),
      sp_(split_sp(config, world)),
      comm_(sp_ ? *sp_ : world),
      problem_(models::attention_problem(config.model, config.workload)),
      positions_(info.positions(comm_.rank(), comm_.size(), problem_.seq_len, config.options)) {
  if (attention_scope())
    make_attention(data);
  else
    make_layers(data);
}

Step::~Step() = default;

StrategyContext Step::context() {
  return StrategyContext{dev_, comm_, problem_, config_.options, positions_};
}

void Step::make_attention(const StepData& data) {
  const auto& p = problem_;
  const auto n = static_cast<std::int64_t>(positions_.size());
  const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, d = p.head_dim;
  inputs_ = {data.input(StepInput::q, {bh, n, d}, positions_),
             data.input(StepInput::k, {bkv, n, d}, positions_),
             data.input(StepInput::v, {bkv, n, d}, positions_)};
  if (config_.workload.passes == models::Passes::fwd_bwd)
    inputs_.push_back(data.input(StepInput::d_o, {bh, n, d}, positions_));
  attention_ = info_.create(context());
}

void Step::make_layers(const StepData& data) {
  const bool model = config_.workload.scope == models::Scope::model;
  const auto count = model ? config_.model.layers : 1;
  const auto shapes = layer_param_shapes(config_.model);
  for (std::int64_t l = 0; l < count; ++l) {
    NamedTensors weights;
    for (const auto& ps : shapes) weights.add(ps.name, data.weight(static_cast<int>(l), ps.name, ps.shape));
    layers_.push_back(std::make_unique<SpLayer>(context(), info_, config_.model, std::move(weights)));
  }
  // The layers' weights and gradients are traced tensors; the rest of the 16 bytes per parameter (fp32
  // master weights, Adam moments, the embedding table and its gradient) is one allocation.
  if (model) {
    const double e = static_cast<double>(rt::dtype_bytes(config_.workload.dtype));
    const bool backward = config_.workload.passes == models::Passes::fwd_bwd;
    const double traced = (backward ? 2 : 1) * static_cast<double>(count) * layer_params(config_.model) * e;
    const double rest = 16 * model_parameters(config_.model) - traced;
    if (rest > 0) model_state_ = data.model_state(static_cast<std::int64_t>(rest / e));
  }
  const auto n = static_cast<std::int64_t>(positions_.size());
  const rt::Shape shape{problem_.batch, n, config_.model.hidden};
  inputs_ = {data.input(StepInput::x, shape, positions_)};
  if (config_.workload.passes == models::Passes::fwd_bwd)
    inputs_.push_back(data.input(StepInput::d_y, shape, positions_));
}

void Step::forward() {
  dev_.begin_phase("forward");
  if (attention_) {
    outputs_ = {attention_->forward(inputs_[0], inputs_[1], inputs_[2])};
  } else {
    // Each layer's input lives as long as that layer keeps it for its backward, not longer.
    rt::Tensor x = std::move(inputs_[0]);
    for (auto& layer : layers_) x = layer->forward(x);
    outputs_ = {x};
  }
  dev_.end_phase("forward");
}

void Step::backward() {
  dev_.begin_phase("backward");
  if (attention_) {
    const AttnGrads g = attention_->backward(inputs_[3]);
    outputs_.insert(outputs_.end(), {g.dq, g.dk, g.dv});
  } else {
    GradBuckets buckets(world_, config_.bucket_bytes);
    rt::Tensor dy = std::move(inputs_[1]);  // released once the last layer's backward has used it
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
      grads_.push_back((*it)->backward(dy, &buckets));
      dy = grads_.back().dx;
    }
    buckets.finish();
    outputs_.push_back(dy);
  }
  dev_.end_phase("backward");
}

const NamedTensors& Step::weight_grads() const {
  if (grads_.empty()) throw rt::RuntimeError("Step::weight_grads: no layer backward has run");
  return grads_.back().weights;
}

}  // namespace spsim::strategies
