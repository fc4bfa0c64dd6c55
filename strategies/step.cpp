// The training step of one rank: inputs, forward, backward and the weight-gradient reduction.
#include "strategies/step.hpp"

#include <algorithm>
#include <map>

#include "runtime/core/hash.hpp"

namespace spsim::strategies {

namespace {

const LayerInfo& layer_of(const StepConfig& cfg) {
  if (cfg.layer) return *cfg.layer;
  return *find_layer_strategy("replicated");
}

// The ranks of one color vector's group, or nullptr when every rank is in it (the world itself).
std::unique_ptr<rt::Comm> split_by(rt::Comm& world, const std::vector<int>& color) {
  if (std::all_of(color.begin(), color.end(), [&](int c) { return c == color.front(); })) return nullptr;
  return world.split(color);
}

std::vector<int> colors(const ParallelShape& s, int (*of)(const ParallelShape&, int)) {
  std::vector<int> out(static_cast<std::size_t>(s.world()));
  for (int r = 0; r < s.world(); ++r) out[static_cast<std::size_t>(r)] = of(s, r);
  return out;
}

// The buckets of every reduction group (none for a group of one rank): a gradient goes to its
// parameter's group's buckets.
class GroupBuckets final : public GradSink {
 public:
  GroupBuckets(const std::vector<rt::Comm*>& comms, std::uint64_t cap) {
    for (rt::Comm* c : comms) buckets_.push_back(c ? std::make_unique<GradBuckets>(*c, cap) : nullptr);
  }
  void bind(const std::vector<ParamShard>& shards, const std::vector<std::size_t>& group) {
    for (std::size_t i = 0; i < shards.size(); ++i) group_of_[shards[i].name] = group[i];
  }
  void ready(const std::string& param, rt::Tensor grad) override {
    if (auto& b = buckets_.at(group_of_.at(param))) b->ready(std::move(grad));
  }
  // Posts every group's open bucket, then waits for them all.
  void finish() {
    for (auto& b : buckets_)
      if (b) b->flush();
    for (auto& b : buckets_)
      if (b) b->finish();
  }

 private:
  std::vector<std::unique_ptr<GradBuckets>> buckets_;
  std::map<std::string, std::size_t> group_of_;
};

}  // namespace

ParallelShape step_shape(const StepConfig& config) {
  return {config.tp, config.degree, config.dp};
}

namespace {
// The step's layout, checked against the ranks it runs on (the groups are split from it).
ParallelShape checked_shape(const StepConfig& config, const rt::Comm& world) {
  const ParallelShape s = step_shape(config);
  if (s.world() != world.size())
    throw rt::RuntimeError("Step: tp × degree × dp = " + std::to_string(s.tp) + " × " + std::to_string(s.cp) +
                           " × " + std::to_string(s.dp) + " ranks, but the world has " +
                           std::to_string(world.size()));
  return s;
}
}  // namespace

bool step_sequence_first(const StepConfig& config) {
  return config.workload.scope != models::Scope::attention && layer_of(config).sequence_first;
}

rt::Positions step_rows(const StepConfig& config, const StrategyInfo& info, int rank) {
  const ParallelShape shape = step_shape(config);
  auto positions = info.positions(shape.cp_rank(rank), shape.cp, models::attention_problem(config.model, config.workload),
                                  config.options);
  if (config.workload.scope == models::Scope::attention) return positions;
  return layer_of(config).rows(positions, shape.tp_rank(rank), shape.tp, config.layer_options);
}

std::vector<ParamShard> step_shards(const StepConfig& config, int rank) {
  const ParallelShape shape = step_shape(config);
  return layer_of(config).params(config.model, shape.tp_rank(rank), shape.tp, config.layer_options);
}

Step::Step(const StepConfig& config, const StrategyInfo& info, rt::Device& dev, rt::Comm& world,
           const StepData& data)
    : config_(config),
      info_(info),
      layer_(layer_of(config)),
      shape_(checked_shape(config, world)),
      dev_(dev),
      world_(world),
      tp_(shape_.tp > 1 ? world.split(colors(shape_, [](const ParallelShape& s, int r) { return r / s.tp; }))
                        : nullptr),
      sp_(split_by(world, colors(shape_,
                                 [](const ParallelShape& s, int r) { return s.tp_rank(r) + s.tp * s.dp_rank(r); }))),
      comm_(sp_ ? *sp_ : world),
      problem_(models::attention_problem(config.model, config.workload)),
      positions_(info.positions(comm_.rank(), comm_.size(), problem_, config.options)) {
  if (attention_scope()) {
    rows_ = positions_;
    make_attention(data);
  } else {
    rows_ = step_rows(config, info, world.rank());
    shards_ = step_shards(config, world.rank());
    make_grad_groups();
    make_layers(data);
  }
}

Step::~Step() = default;

StrategyContext Step::context(const models::AttnProblem& problem, std::uint64_t seed) {
  return StrategyContext{dev_, comm_, problem, config_.options, positions_, seed};
}

void Step::make_attention(const StepData& data) {
  const auto& p = problem_;
  const std::int64_t n = positions_.size();
  const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, d = p.head_dim;
  inputs_ = {data.input(StepInput::q, {bh, n, d}, positions_),
             data.input(StepInput::k, {bkv, n, d}, positions_),
             data.input(StepInput::v, {bkv, n, d}, positions_)};
  if (config_.workload.passes == models::Passes::fwd_bwd)
    inputs_.push_back(data.input(StepInput::d_o, {bh, n, d}, positions_));
  attention_ = info_.create(context(problem_, rt::WordHash().add(static_cast<std::uint64_t>(world_.rank())).value()));
}

// One group per distinct vector of the parameters' reduce colors over the world's ranks; all ranks
// split in the same order (the groups are made in parameter order on every rank).
void Step::make_grad_groups() {
  std::vector<std::vector<ParamShard>> by_tp_rank;
  for (int t = 0; t < shape_.tp; ++t)
    by_tp_rank.push_back(layer_.params(config_.model, t, shape_.tp, config_.layer_options));
  std::vector<std::vector<int>> seen;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    std::vector<int> color(static_cast<std::size_t>(shape_.world()));
    for (int r = 0; r < shape_.world(); ++r)
      color[static_cast<std::size_t>(r)] = by_tp_rank[static_cast<std::size_t>(shape_.tp_rank(r))][i].reduce_color;
    auto it = std::find(seen.begin(), seen.end(), color);
    if (it == seen.end()) {
      seen.push_back(color);
      std::unique_ptr<rt::Comm> group = split_by(world_, color);
      // A shard no other rank holds has nothing to sum with (a world of one rank keeps its bucket: the
      // replicated layer at degree 1 reduces as it always has).
      grad_comms_.push_back(group ? (group->size() > 1 ? group.get() : nullptr) : &world_);
      if (group) owned_comms_.push_back(std::move(group));
      it = seen.end() - 1;
    }
    grad_group_.push_back(static_cast<std::size_t>(it - seen.begin()));
  }
}

void Step::make_layers(const StepData& data) {
  const bool model = config_.workload.scope == models::Scope::model;
  const auto count = model ? config_.model.layers : 1;
  const models::AttnProblem local = layer_.attention_problem(problem_, shape_.tp, config_.layer_options);
  const auto rank = world_.rank();
  for (std::int64_t l = 0; l < count; ++l) {
    NamedTensors weights;
    for (const auto& shard : shards_) weights.add(shard.name, data.weight(static_cast<int>(l), shard));
    const auto layer = static_cast<std::uint64_t>(l);
    const std::uint64_t seed = rt::WordHash().add(layer).add(static_cast<std::uint64_t>(rank)).value();
    LayerSetup setup{dev_, tp_.get(), local, info_.create(context(local, seed)), config_.model, config_.layer_options};
    setup.seed = seed;
    setup.replicated_seed = rt::WordHash()
                                .add(layer)
                                .add(static_cast<std::uint64_t>(shape_.cp_rank(rank)))
                                .add(static_cast<std::uint64_t>(shape_.dp_rank(rank)))
                                .add(~std::uint64_t{0})  // never a rank's own seed
                                .value();
    layers_.push_back(layer_.create(std::move(setup), std::move(weights)));
  }
  // The layers' weights and gradients are traced tensors; the rest of the 16 bytes per parameter the
  // rank holds (fp32 master weights, Adam moments, its share of the embedding table and its gradient)
  // is one allocation.
  if (model) {
    const double e = static_cast<double>(rt::dtype_bytes(config_.workload.dtype));
    const bool backward = config_.workload.passes == models::Passes::fwd_bwd;
    double local_layer = 0;
    for (const auto& s : shards_) local_layer += static_cast<double>(rt::numel(s.local()));
    const double held = static_cast<double>(count) * local_layer +
                        static_cast<double>(config_.model.vocab) * static_cast<double>(config_.model.hidden) /
                            shape_.tp;
    const double traced = (backward ? 2 : 1) * static_cast<double>(count) * local_layer * e;
    // bf16 weights and gradients (4 bytes) and the optimizer state (12), the latter split over the
    // rank's CP × DP replicas under the distributed optimizer. Megatron-LM's fp32 main gradients (the
    // megatron_sp layer's gradient_accumulation_fusion, behind 16-bit weights) hold 4 bytes a gradient
    // instead of 2: 2 more per parameter.
    const double optimizer = 12.0 / (config_.distributed_optimizer ? shape_.cp * shape_.dp : 1);
    const auto fusion = config_.layer_options.find("gradient_accumulation_fusion");
    const bool fp32_grads = fusion != config_.layer_options.end() && fusion->second == "true" && e < 4;
    const double rest = (4 + (fp32_grads ? 2 : 0) + optimizer) * held - traced;
    if (rest > 0) model_state_ = data.model_state(static_cast<std::int64_t>(rest / e));
  }
  const std::int64_t n = rows_.size();
  const rt::Shape shape = layer_.sequence_first ? rt::Shape{n, problem_.batch, config_.model.hidden}
                                                : rt::Shape{problem_.batch, n, config_.model.hidden};
  inputs_ = {data.input(StepInput::x, shape, rows_)};
  if (config_.workload.passes == models::Passes::fwd_bwd) inputs_.push_back(data.input(StepInput::d_y, shape, rows_));
}

void Step::forward() {
  dev_.begin_phase("forward");
  if (attention_) {
    outputs_ = {attention_->forward(inputs_[0], inputs_[1], inputs_[2])};
  } else {
    // Each layer's input lives as long as that layer keeps it for its backward, not longer; with
    // recomputation the step keeps it (the layer forgets its forward) until the layer's backward.
    rt::Tensor x = std::move(inputs_[0]);
    for (auto& layer : layers_) {
      if (recompute()) checkpoints_.push_back(x);
      x = layer->forward(x);
      if (recompute()) layer->forget();
    }
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
    GroupBuckets buckets(grad_comms_, config_.bucket_bytes);
    buckets.bind(shards_, grad_group_);
    rt::Tensor dy = std::move(inputs_[1]);  // released once the last layer's backward has used it
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
      if (recompute()) {  // the layer's forward again, from its checkpoint, just before its backward
        (void)(*it)->forward(checkpoints_.back());
        checkpoints_.pop_back();
      }
      grads_.push_back((*it)->backward(dy, buckets));
      dy = std::move(grads_.back().dx);  // the next layer's upstream gradient; not kept past it
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
