// Sequence-parallel pre-LN transformer layer on one rank (see layer.hpp).
#include "strategies/layer.hpp"

#include <array>
#include <initializer_list>
#include <utility>

#include "runtime/core/hash.hpp"

namespace spsim::strategies {

using rt::Tensor;

std::vector<ParamShape> layer_param_shapes(const models::ModelSpec& m) {
  const std::int64_t qd = m.heads * m.head_dim, kvd = m.kv_heads * m.head_dim;
  std::vector<ParamShape> out = {{"ln1.gamma", {m.hidden}},        {"ln1.beta", {m.hidden}},
                                 {"wq", {qd, m.hidden}},           {"bq", {qd}},
                                 {"wk", {kvd, m.hidden}},          {"bk", {kvd}},
                                 {"wv", {kvd, m.hidden}},          {"bv", {kvd}},
                                 {"wo", {m.hidden, qd}},           {"bo", {m.hidden}},
                                 {"ln2.gamma", {m.hidden}},        {"ln2.beta", {m.hidden}},
                                 {"w1", {m.ffn_hidden, m.hidden}}, {"b1", {m.ffn_hidden}}};
  if (m.mlp == models::Mlp::swiglu)
    out.insert(out.end(), {{"w3", {m.ffn_hidden, m.hidden}}, {"b3", {m.ffn_hidden}}});
  out.insert(out.end(), {{"w2", {m.hidden, m.ffn_hidden}}, {"b2", {m.hidden}}});
  return out;
}

std::uint64_t HiddenDropout::seed(int site) const {
  return rt::WordHash().add(seed_).add(round_).add(static_cast<std::uint64_t>(site)).value();
}

void HiddenDropout::add(rt::Device& dev, const Tensor& residual, const Tensor& branch, Tensor& y, int site) {
  if (p_ == 0) {
    dev.add(residual, branch, y);
    return;
  }
  auto& mask = masks_.at(static_cast<std::size_t>(site));
  mask = dev.empty_mask(branch.numel());
  dev.dropout(branch, residual, y, mask, p_, seed(site));
}

Tensor HiddenDropout::branch_grad(rt::Device& dev, const Tensor& dy, int site) {
  if (p_ == 0) return dy;
  Tensor d = dev.empty(dy.shape());
  auto& mask = masks_.at(static_cast<std::size_t>(site));
  dev.dropout_backward(dy, mask, d, p_);
  mask = Tensor();
  return d;
}

namespace {
constexpr double kLayerNormEps = 1e-5;
constexpr std::array<int, 4> kSwapSeqHeads = {0, 2, 1, 3};  // [B, s, H, D] <-> [B, H, s, D]
}  // namespace

struct SpLayer::Saved {
  Tensor x, h1, mean1, rstd1, o2, r1, h2, mean2, rstd2, f1, f3, g;  // f3: SwiGLU's up projection
};

SpLayer::SpLayer(LayerSetup setup, NamedTensors params)
    : dev_(setup.dev),
      model_(std::move(setup.model)),
      batch_(setup.attention_problem.batch),
      params_(std::move(params)),
      attention_(std::move(setup.attention)),
      dropout_(model_.hidden_dropout, setup.seed) {}

void SpLayer::forget() {
  saved_.reset();
  dropout_.forget();
  attention_->forget();
}

SpLayer::~SpLayer() = default;

Tensor SpLayer::forward(const Tensor& x) {
  const std::int64_t s = x.dim(1), rows = batch_ * s, hd = model_.head_dim;
  auto& P = params_;
  saved_ = std::make_unique<Saved>();
  Saved& sv = *saved_;
  sv.x = x.reshape({rows, model_.hidden});
  sv.h1 = dev_.empty(sv.x.shape());
  sv.mean1 = dev_.empty({rows});
  sv.rstd1 = dev_.empty({rows});
  dev_.layer_norm(sv.x, P.at("ln1.gamma"), P.at("ln1.beta"), kLayerNormEps, sv.h1, sv.mean1, sv.rstd1);
  // Projections, then [B, s, H, D] -> [B*H, s, D] for the attention core.
  auto project = [&](const char* w, const char* b, std::int64_t heads) {
    Tensor y = dev_.empty({rows, heads * hd});
    dev_.linear(sv.h1, P.at(w), P.at(b), y);
    return dev_.permute(y.reshape({batch_, s, heads, hd}), kSwapSeqHeads).reshape({batch_ * heads, s, hd});
  };
  Tensor q = project("wq", "bq", model_.heads);
  Tensor k = project("wk", "bk", model_.kv_heads);
  Tensor v = project("wv", "bv", model_.kv_heads);
  Tensor o = attention_->forward(q, k, v);
  sv.o2 = dev_.permute(o.reshape({batch_, model_.heads, s, hd}), kSwapSeqHeads)
              .reshape({rows, model_.heads * hd});
  Tensor a = dev_.empty({rows, model_.hidden});
  dev_.linear(sv.o2, P.at("wo"), P.at("bo"), a);
  sv.r1 = dev_.empty(a.shape());
  dropout_.add(dev_, sv.x, a, sv.r1, 1);
  sv.h2 = dev_.empty(a.shape());
  sv.mean2 = dev_.empty({rows});
  sv.rstd2 = dev_.empty({rows});
  dev_.layer_norm(sv.r1, P.at("ln2.gamma"), P.at("ln2.beta"), kLayerNormEps, sv.h2, sv.mean2, sv.rstd2);
  sv.f1 = dev_.empty({rows, model_.ffn_hidden});
  dev_.linear(sv.h2, P.at("w1"), P.at("b1"), sv.f1);
  sv.g = dev_.empty(sv.f1.shape());
  if (model_.mlp == models::Mlp::swiglu) {
    sv.f3 = dev_.empty(sv.f1.shape());
    dev_.linear(sv.h2, P.at("w3"), P.at("b3"), sv.f3);
    dev_.swiglu(sv.f1, sv.f3, sv.g);
  } else {
    dev_.gelu(sv.f1, sv.g);
  }
  Tensor f2 = dev_.empty(a.shape());
  dev_.linear(sv.g, P.at("w2"), P.at("b2"), f2);
  Tensor y = dev_.empty(a.shape());
  dropout_.add(dev_, sv.r1, f2, y, 2);
  return y.reshape(x.shape());
}

LayerGrads SpLayer::backward(const Tensor& dy_in, GradSink& sink) {
  Saved& sv = *saved_;
  const std::int64_t rows = sv.x.dim(0), s = rows / batch_, hd = model_.head_dim;
  auto& P = params_;
  LayerGrads out{Tensor(), P.zeros_like(dev_)};
  auto& W = out.weights;
  // Gradients as they become final, in the order backward completes them.
  auto final_grads = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) sink.ready(n, W.at(n));
  };
  const Tensor dy = dy_in.reshape({rows, model_.hidden});
  // MLP branch.
  Tensor dg = dev_.empty(sv.g.shape());
  dev_.linear_backward(sv.g, P.at("w2"), dropout_.branch_grad(dev_, dy, 2), dg, W.at("w2"), W.at("b2"));
  final_grads({"w2", "b2"});
  Tensor df1 = dev_.empty(sv.f1.shape()), df3, dh2;
  if (model_.mlp == models::Mlp::swiglu) {
    df3 = dev_.empty(sv.f3.shape());
    dev_.swiglu_backward(sv.f1, sv.f3, dg, df1, df3);
  } else {
    dev_.gelu_backward(sv.f1, dg, df1);
  }
  dh2 = dev_.empty(sv.h2.shape());
  dev_.linear_backward(sv.h2, P.at("w1"), df1, dh2, W.at("w1"), W.at("b1"));
  final_grads({"w1", "b1"});
  if (model_.mlp == models::Mlp::swiglu) {
    dev_.linear_backward(sv.h2, P.at("w3"), df3, dh2, W.at("w3"), W.at("b3"), /*accumulate_dx=*/true);
    final_grads({"w3", "b3"});
  }
  Tensor dr1 = dev_.empty(dy.shape());
  dev_.copy(dy, dr1);  // residual path
  dev_.layer_norm_backward(sv.r1, P.at("ln2.gamma"), sv.mean2, sv.rstd2, dh2, dr1, W.at("ln2.gamma"),
                           W.at("ln2.beta"), /*accumulate_dx=*/true);
  final_grads({"ln2.gamma", "ln2.beta"});
  // Attention branch.
  Tensor do2 = dev_.empty(sv.o2.shape());
  dev_.linear_backward(sv.o2, P.at("wo"), dropout_.branch_grad(dev_, dr1, 1), do2, W.at("wo"), W.at("bo"));
  final_grads({"wo", "bo"});
  Tensor d_o = dev_.permute(do2.reshape({batch_, s, model_.heads, hd}), kSwapSeqHeads)
                   .reshape({batch_ * model_.heads, s, hd});
  AttnGrads g = attention_->backward(d_o);
  auto unproject = [&](const Tensor& d, std::int64_t heads) {
    return dev_.permute(d.reshape({batch_, heads, s, hd}), kSwapSeqHeads).reshape({rows, heads * hd});
  };
  Tensor dh1 = dev_.empty(sv.h1.shape());
  dev_.linear_backward(sv.h1, P.at("wq"), unproject(g.dq, model_.heads), dh1, W.at("wq"), W.at("bq"));
  final_grads({"wq", "bq"});
  dev_.linear_backward(sv.h1, P.at("wk"), unproject(g.dk, model_.kv_heads), dh1, W.at("wk"), W.at("bk"),
                       true);
  final_grads({"wk", "bk"});
  dev_.linear_backward(sv.h1, P.at("wv"), unproject(g.dv, model_.kv_heads), dh1, W.at("wv"), W.at("bv"),
                       true);
  final_grads({"wv", "bv"});
  out.dx = dr1;  // residual path, then + the LN1 branch
  dev_.layer_norm_backward(sv.x, P.at("ln1.gamma"), sv.mean1, sv.rstd1, dh1, out.dx, W.at("ln1.gamma"),
                           W.at("ln1.beta"), /*accumulate_dx=*/true);
  final_grads({"ln1.gamma", "ln1.beta"});
  out.dx = out.dx.reshape(dy_in.shape());
  saved_.reset();
  dropout_.backward_done();
  return out;
}

double layer_params(const models::ModelSpec& m) {
  double n = 0;
  for (const auto& p : strategies::layer_param_shapes(m)) n += static_cast<double>(rt::numel(p.shape));
  return n;
}

double model_parameters(const models::ModelSpec& model) {
  return static_cast<double>(model.layers) * layer_params(model) +
         static_cast<double>(model.vocab) * static_cast<double>(model.hidden);
}

}  // namespace spsim::strategies
