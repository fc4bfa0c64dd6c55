// The layer-strategy registry, parameter shards and the `replicated` layer's entry (layer_strategy.hpp).
#include "strategies/layer_strategy.hpp"

#include <algorithm>
#include <utility>

#include "runtime/core/error.hpp"
#include "strategies/layer.hpp"

namespace spsim::strategies {

using rt::Tensor;

const Tensor& NamedTensors::at(const std::string& name) const {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw rt::RuntimeError("no tensor named '" + name + "'");
  return tensors[static_cast<std::size_t>(it - names.begin())];
}

Tensor& NamedTensors::at(const std::string& name) {
  return const_cast<Tensor&>(std::as_const(*this).at(name));
}

void NamedTensors::add(std::string name, Tensor t) {
  names.push_back(std::move(name));
  tensors.push_back(std::move(t));
}

NamedTensors NamedTensors::zeros_like(rt::Device& dev) const {
  NamedTensors out;
  for (std::size_t i = 0; i < names.size(); ++i) out.add(names[i], dev.zeros(tensors[i].shape()));
  return out;
}

rt::Shape ParamShard::local() const {
  rt::Shape s = whole;
  if (dim >= 0) s[static_cast<std::size_t>(dim)] = len;
  return s;
}

namespace {
// A [outer, extent, inner] view of `whole` around `dim`: the slice is rows [start, start + len) of the
// middle index for every outer index.
struct Strides {
  std::int64_t outer = 1, extent = 1, inner = 1;
};
Strides strides_of(const rt::Shape& whole, int dim) {
  Strides s;
  for (int i = 0; i < static_cast<int>(whole.size()); ++i) {
    const std::int64_t e = whole[static_cast<std::size_t>(i)];
    if (i < dim) s.outer *= e;
    if (i == dim) s.extent = e;
    if (i > dim) s.inner *= e;
  }
  return s;
}
}  // namespace

namespace {
// The slice must lie inside `whole` and `values` hold `expected` elements.
void check_slice(const ParamShard& p, std::size_t values, std::int64_t expected) {
  const bool inside = p.dim < 0 || (p.dim < static_cast<int>(p.whole.size()) && p.start >= 0 && p.len >= 0 &&
                                    p.start + p.len <= p.whole[static_cast<std::size_t>(p.dim)]);
  if (!inside || static_cast<std::int64_t>(values) != expected)
    throw rt::RuntimeError("parameter shard " + p.name + " of " + rt::to_string(p.whole) + ": slice [" +
                           std::to_string(p.start) + ", " + std::to_string(p.start + p.len) + ") along dim " +
                           std::to_string(p.dim) + " and " + std::to_string(values) + " values do not fit");
}
}  // namespace

std::vector<double> ParamShard::take(const std::vector<double>& whole_values) const {
  check_slice(*this, whole_values.size(), rt::numel(whole));
  if (dim < 0) return whole_values;
  const Strides s = strides_of(whole, dim);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(s.outer * len * s.inner));
  for (std::int64_t o = 0; o < s.outer; ++o) {
    const auto first = whole_values.begin() + (o * s.extent + start) * s.inner;
    out.insert(out.end(), first, first + len * s.inner);
  }
  return out;
}

void ParamShard::put(const std::vector<double>& local_values, std::vector<double>& whole_values) const {
  check_slice(*this, local_values.size(), rt::numel(local()));
  check_slice(*this, whole_values.size(), rt::numel(whole));
  if (dim < 0) {
    whole_values = local_values;
    return;
  }
  const Strides s = strides_of(whole, dim);
  for (std::int64_t o = 0; o < s.outer; ++o)
    std::copy_n(local_values.begin() + o * len * s.inner, len * s.inner,
                whole_values.begin() + (o * s.extent + start) * s.inner);
}

// Megatron's layer entry (strategies/megatron/megatron.cpp).
LayerInfo megatron_layer_info();

namespace {

LayerInfo replicated_layer_info() {
  LayerInfo info;
  info.name = "replicated";
  info.description =
      "every weight on every rank, the attention strategy inside; weight gradients summed over all ranks";
  info.check = [](const models::ModelSpec&, const models::AttnProblem&, const ParallelShape& shape,
                  const Options&) -> std::optional<Refusal> {
    if (shape.tp == 1) return std::nullopt;
    return Refusal{"parallel.tp", "the replicated layer has no tensor parallelism (tp " +
                                      std::to_string(shape.tp) + "); use layer.name megatron_sp, or tp 1"};
  };
  info.attention_problem = [](const models::AttnProblem& p, int, const Options&) { return p; };
  info.params = [](const models::ModelSpec& m, int, int, const Options&) {
    std::vector<ParamShard> out;
    for (const auto& ps : layer_param_shapes(m)) out.push_back({ps.name, ps.shape});
    return out;
  };
  info.rows = [](const rt::Positions& positions, int, int, const Options&) { return positions; };
  info.create = [](LayerSetup setup, NamedTensors params) -> std::unique_ptr<LayerStrategy> {
    return std::make_unique<SpLayer>(std::move(setup), std::move(params));
  };
  return info;
}

}  // namespace

const std::vector<LayerInfo>& layer_strategies() {
  static const std::vector<LayerInfo> infos = {replicated_layer_info(), megatron_layer_info()};
  return infos;
}

const LayerInfo* find_layer_strategy(const std::string& name) {
  for (const auto& i : layer_strategies())
    if (i.name == name) return &i;
  return nullptr;
}

std::vector<std::string> layer_strategy_names() {
  std::vector<std::string> out;
  for (const auto& i : layer_strategies()) out.push_back(i.name);
  return out;
}

Options complete_layer_options(const LayerInfo& info, const Options& given, const std::string& where) {
  return complete_option_values(info.options, given, "layer strategy '" + info.name + "'", where);
}

}  // namespace spsim::strategies
