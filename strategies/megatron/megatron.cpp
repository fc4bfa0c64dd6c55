// Megatron tensor parallelism with sequence parallelism (Shoeybi et al. 2019, arXiv:1909.08053;
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, §4.2): the `megatron_sp` layer strategy.
//
// On TP rank t of T, of the layer's weights (nn.Linear convention y = x Wᵀ + b):
//   column-parallel  Q, K, V, W1 (and SwiGLU's W3) hold output rows t·out/T … (their biases alike): head group t of the
//                    attention (H/T query heads; Hkv/T KV heads, or when Hkv < T the one KV head
//                    those query heads read, held by T/Hkv ranks) and slice t of the MLP;
//   row-parallel     Wo and W2 hold input columns alike; each rank's product is a partial sum.
//                    Their biases bo and b2 are added once: TP rank 0's GEMM adds them to its partial
//                    sum, so the reduction adds them exactly once, and only rank 0's gradient is not 0;
//   LayerNorms       replicated.
// The attention between the projections runs on the rank's heads as the attention strategy over the
// CP group (any of them: the context-parallel level). Hidden dropout (ModelSpec::hidden_dropout) makes
// each residual add Megatron-LM's fused bias-dropout-add, after the reduction (on the rank's n/T rows
// under sequence parallelism): HiddenDropout of layer.hpp.
//
// Communication (per layer; forward, then backward):
//   sequence_parallel = true (Korthikanti's g and ḡ): the LayerNorm and residual regions hold n/T of
//     the CP rank's n tokens (rows t·n/T …); an all-gather along the sequence enters each
//     column-parallel block, a reduce-scatter leaves each row-parallel block. Backward: the
//     row-parallel block's output gradient is all-gathered, the column-parallel block's input gradient
//     reduce-scattered, and the column-parallel input (LN output) gathered again for the weight
//     gradients, in flight while the input gradient's GEMM runs (as Megatron-Core keeps only its
//     local shard). 4 all-gathers + 2 reduce-scatters of B·n·hidden per layer in backward, 2 + 2 in
//     forward.
//   sequence_parallel = false (Megatron TP, f and g): every rank holds all n tokens; f is the identity
//     forward and an all-reduce of the input gradient backward, g an all-reduce forward and the
//     identity backward: 2 all-reduces forward, 2 backward.
// The column-parallel input gradient is a sum of the ranks' partials, one term per slice of the
// output dimension (dX = Σ_t dY_t W_t): `dx_reduction` sum. `sum_div` divides that sum by T — the
// mistake ColossalAI's RSA makes with its ÷P, here on purpose, so `spsim check` can show it.
//
// Weight gradients: a TP-sharded weight's gradient is summed over the ranks holding the same shard
// (every CP and DP rank of its TP rank; a replicated KV head also over the T/Hkv ranks sharing it);
// the LayerNorm gradients under sequence parallelism (partial sums over each rank's n/T rows) and bo,
// b2 (non-zero on TP rank 0 only) over the whole world; without sequence parallelism every TP rank
// computes the same LayerNorm gradients from the same rows, so they are summed over CP × DP only.
#include <array>
#include <utility>

#include "strategies/layer.hpp"
#include "strategies/layer_strategy.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;

constexpr double kLayerNormEps = 1e-5;
constexpr std::array<int, 4> kToHeads = {1, 2, 0, 3};     // [s, B, H, D] -> [B, H, s, D]
constexpr std::array<int, 4> kFromHeads = {2, 0, 1, 3};   // [B, H, s, D] -> [s, B, H, D]

[[nodiscard]] bool sequence_parallel(const Options& o) {
  return o.at("sequence_parallel") == "true";
}

// The KV heads TP rank t of T holds: [first, first + count).
struct KvHeads {
  std::int64_t first = 0, count = 0;
  int color = 0;  // the ranks holding the same heads share it
};
[[nodiscard]] KvHeads kv_heads_of(std::int64_t kv_heads, int t, int tp) {
  if (kv_heads >= tp) {
    const std::int64_t per = kv_heads / tp;
    return {t * per, per, t};
  }
  const int share = tp / static_cast<int>(kv_heads);  // ranks per KV head
  return {t / share, 1, t / share};
}

class MegatronLayer final : public LayerStrategy {
 public:
  MegatronLayer(LayerSetup setup, NamedTensors params)
      : dev_(setup.dev),
        tp_(setup.tp),
        t_size_(setup.tp ? setup.tp->size() : 1),
        model_(setup.model),
        batch_(setup.attention_problem.batch),
        heads_(setup.attention_problem.heads),
        kv_heads_(setup.attention_problem.kv_heads),
        sp_(sequence_parallel(setup.options) && setup.tp != nullptr),
        divide_(setup.options.at("dx_reduction") == "sum_div"),
        fp32_dw_(setup.options.at("gradient_accumulation_fusion") == "true"),
        bias_owner_(setup.tp == nullptr || setup.tp->rank() == 0),
        params_(std::move(params)),
        attention_(std::move(setup.attention)),
        // Under sequence parallelism each TP rank drops out its own rows; without it the TP group holds
        // the residual stream alike and must draw alike.
        dropout_(model_.hidden_dropout, sp_ ? setup.seed : setup.replicated_seed) {}

  void forget() override {
    sv_ = Saved{};
    dropout_.forget();
    attention_->forget();
  }

  Tensor forward(const Tensor& x) override {
    const std::int64_t nl = x.dim(0), n = sp_ ? nl * t_size_ : nl, rows = batch_ * n, hd = model_.head_dim;
    auto& P = params_;
    sv_ = Saved{};
    sv_.x = x.reshape({batch_ * nl, model_.hidden});
    sv_.h1 = layer_norm(sv_.x, "ln1", sv_.mean1, sv_.rstd1);
    Tensor h1 = gather(sv_.h1);  // g: the whole CP chunk enters the column-parallel block
    auto project = [&](const char* w, const char* b, std::int64_t heads) {
      Tensor y = dev_.empty({rows, heads * hd});
      dev_.linear(h1, P.at(w), P.at(b), y);
      return dev_.permute(y.reshape({n, batch_, heads, hd}), kToHeads).reshape({batch_ * heads, n, hd});
    };
    Tensor q = project("wq", "bq", heads_);
    Tensor k = project("wk", "bk", kv_heads_);
    Tensor v = project("wv", "bv", kv_heads_);
    h1 = Tensor();
    Tensor o = attention_->forward(q, k, v);
    sv_.o2 = dev_.permute(o.reshape({batch_, heads_, n, hd}), kFromHeads).reshape({rows, heads_ * hd});
    Tensor a = dev_.empty({rows, model_.hidden});
    dev_.linear(sv_.o2, P.at("wo"), bias("bo"), a);
    Tensor al = reduce(a);  // ḡ: the partial sums summed (and scattered along the sequence)
    sv_.r1 = dev_.empty(al.shape());
    dropout_.add(dev_, sv_.x, al, sv_.r1, 1);  // on the rank's rows: after the reduction
    sv_.h2 = layer_norm(sv_.r1, "ln2", sv_.mean2, sv_.rstd2);
    Tensor h2 = gather(sv_.h2);
    sv_.f1 = dev_.empty({rows, P.at("w1").dim(0)});
    dev_.linear(h2, P.at("w1"), P.at("b1"), sv_.f1);
    if (swiglu()) {
      sv_.f3 = dev_.empty(sv_.f1.shape());
      dev_.linear(h2, P.at("w3"), P.at("b3"), sv_.f3);
    }
    h2 = Tensor();  // the gathered LN output: backward gathers it again
    sv_.g = dev_.empty(sv_.f1.shape());
    if (swiglu())
      dev_.swiglu(sv_.f1, sv_.f3, sv_.g);
    else
      dev_.gelu(sv_.f1, sv_.g);
    Tensor f2 = dev_.empty({rows, model_.hidden});
    dev_.linear(sv_.g, P.at("w2"), bias("b2"), f2);
    Tensor f2l = reduce(f2);
    Tensor y = dev_.empty(f2l.shape());
    dropout_.add(dev_, sv_.r1, f2l, y, 2);
    return y.reshape(x.shape());
  }

  LayerGrads backward(const Tensor& dy_in, GradSink& sink) override {
    const std::int64_t nl = dy_in.dim(0), n = sp_ ? nl * t_size_ : nl, hd = model_.head_dim;
    auto& P = params_;
    LayerGrads out{Tensor(), P.zeros_like(dev_)};
    auto& W = out.weights;
    auto ready = [&](std::initializer_list<const char*> names) {
      for (const char* name : names) sink.ready(name, W.at(name));
    };
    const Tensor dy = dy_in.reshape({batch_ * nl, model_.hidden});
    // W2, row-parallel: its output gradient is the whole chunk's.
    Tensor dg = dev_.empty(sv_.g.shape()), db2 = grad_bias(W, "b2");
    dev_.linear_backward(sv_.g, P.at("w2"), gather(dropout_.branch_grad(dev_, dy, 2)), dg, W.at("w2"), db2,
                         /*accumulate_dx=*/false, fp32_dw_);
    ready({"w2", "b2"});
    Tensor df1 = dev_.empty(sv_.f1.shape());
    std::vector<ColumnGrad> mlp_in;
    if (swiglu()) {
      Tensor df3 = dev_.empty(sv_.f3.shape());
      dev_.swiglu_backward(sv_.f1, sv_.f3, dg, df1, df3);
      mlp_in = {{"w1", "b1", std::move(df1)}, {"w3", "b3", std::move(df3)}};
    } else {
      dev_.gelu_backward(sv_.f1, dg, df1);
      mlp_in = {{"w1", "b1", std::move(df1)}};
    }
    dg = Tensor();
    // W1 (and W3), column-parallel.
    Tensor dh2 = column_backward(sv_.h2, std::move(mlp_in), W);
    ready({"w1", "b1"});
    if (swiglu()) ready({"w3", "b3"});
    Tensor dr1 = dev_.empty(dy.shape());
    dev_.copy(dy, dr1);  // residual path
    dev_.layer_norm_backward(sv_.r1, P.at("ln2.gamma"), sv_.mean2, sv_.rstd2, dh2, dr1, W.at("ln2.gamma"),
                             W.at("ln2.beta"), /*accumulate_dx=*/true);
    ready({"ln2.gamma", "ln2.beta"});
    dh2 = Tensor();
    // Wo, row-parallel.
    Tensor do2 = dev_.empty(sv_.o2.shape()), dbo = grad_bias(W, "bo");
    dev_.linear_backward(sv_.o2, P.at("wo"), gather(dropout_.branch_grad(dev_, dr1, 1)), do2, W.at("wo"), dbo,
                         /*accumulate_dx=*/false, fp32_dw_);
    ready({"wo", "bo"});
    Tensor d_o =
        dev_.permute(do2.reshape({n, batch_, heads_, hd}), kToHeads).reshape({batch_ * heads_, n, hd});
    do2 = Tensor();
    AttnGrads g = attention_->backward(d_o);
    d_o = Tensor();
    auto unproject = [&](const Tensor& d, std::int64_t heads) {
      return dev_.permute(d.reshape({batch_, heads, n, hd}), kFromHeads).reshape({n * batch_, heads * hd});
    };
    // Q, K, V, column-parallel: one input gradient from the three.
    Tensor dh1 = column_backward(sv_.h1,
                                 {{"wq", "bq", unproject(std::exchange(g.dq, Tensor()), heads_)},
                                  {"wk", "bk", unproject(std::exchange(g.dk, Tensor()), kv_heads_)},
                                  {"wv", "bv", unproject(std::exchange(g.dv, Tensor()), kv_heads_)}},
                                 W);
    ready({"wq", "bq", "wk", "bk", "wv", "bv"});
    out.dx = dr1;  // residual path, then + the LN1 branch
    dev_.layer_norm_backward(sv_.x, P.at("ln1.gamma"), sv_.mean1, sv_.rstd1, dh1, out.dx, W.at("ln1.gamma"),
                             W.at("ln1.beta"), /*accumulate_dx=*/true);
    ready({"ln1.gamma", "ln1.beta"});
    out.dx = out.dx.reshape(dy_in.shape());
    sv_ = Saved{};
    dropout_.backward_done();
    return out;
  }

 private:
  struct Saved {
    Tensor x, h1, mean1, rstd1, o2, r1, h2, mean2, rstd2, f1, f3, g;  // f3: SwiGLU's up projection
  };
  [[nodiscard]] bool swiglu() const { return model_.mlp == models::Mlp::swiglu; }
  // One column-parallel linear's backward: weight and bias names and its output gradient.
  struct ColumnGrad {
    const char* w;
    const char* b;
    Tensor dy;  // [B·n, out / T]
  };

  [[nodiscard]] Tensor layer_norm(const Tensor& x, const std::string& ln, Tensor& mean, Tensor& rstd) {
    Tensor y = dev_.empty(x.shape());
    mean = dev_.empty({x.dim(0)});
    rstd = dev_.empty({x.dim(0)});
    dev_.layer_norm(x, params_.at(ln + ".gamma"), params_.at(ln + ".beta"), kLayerNormEps, y, mean, rstd);
    return y;
  }

  // bo, b2: added by TP rank 0 only (see the header).
  [[nodiscard]] Tensor bias(const char* name) const { return bias_owner_ ? params_.at(name) : Tensor(); }
  [[nodiscard]] Tensor grad_bias(NamedTensors& w, const char* name) const {
    return bias_owner_ ? w.at(name) : Tensor();
  }

  // The rank's rows [nl·B, c] (token-major: Megatron's [s, b, h], so that a TP rank's share of the
  // sequence is one contiguous block) → the CP chunk's [n·B, c]: an all-gather under sequence
  // parallelism, else the rows themselves. `in_flight` gets the gather's Work instead of waiting.
  [[nodiscard]] Tensor gather(const Tensor& local, rt::Work* in_flight = nullptr) {
    if (!sp_) return local;
    Tensor all = dev_.empty({local.dim(0) * t_size_, local.dim(1)});
    rt::Work w = tp_->all_gather(local, all, 0);
    if (in_flight)
      *in_flight = std::move(w);
    else
      w.wait();
    return all;
  }

  // Partial sums [n·B, c] → their sum over the TP group on the rank's rows: a reduce-scatter under
  // sequence parallelism ([nl·B, c]), else an all-reduce (nothing for T = 1).
  [[nodiscard]] Tensor reduce(Tensor partial, rt::Work* in_flight = nullptr) {
    rt::Work w;
    Tensor out = partial;
    if (sp_) {
      out = dev_.empty({partial.dim(0) / t_size_, partial.dim(1)});
      w = tp_->reduce_scatter(partial, out, 0);
    } else if (tp_) {
      w = tp_->all_reduce(out);
    }
    if (in_flight)
      *in_flight = std::move(w);
    else
      w.wait();
    return out;
  }

  // Column-parallel backward (Megatron-Core's order): the input's all-gather is in flight while
  // dX = Σ dY·W runs, dX's reduction while the weight gradients dW = dYᵀ·X run. Returns dX on the local
  // rows, summed over the TP group (÷T under dx_reduction sum_div).
  [[nodiscard]] Tensor column_backward(const Tensor& x_local, std::vector<ColumnGrad> grads, NamedTensors& W) {
    rt::Work gathering, reducing;
    // An op that throws must not free a buffer a collective still writes: wait for both first.
    const InFlight in_flight{gathering, reducing};
    const Tensor x = gather(x_local, &gathering);
    Tensor dx = dev_.empty({grads.front().dy.dim(0), model_.hidden});
    for (std::size_t i = 0; i < grads.size(); ++i)
      dev_.gemm(grads[i].dy, params_.at(grads[i].w), dx, rt::Trans::N, rt::Trans::N, 1.0, i == 0 ? 0.0 : 1.0);
    Tensor dxl = reduce(dx, &reducing);
    gathering.wait();
    Tensor none;
    for (auto& c : grads) {
      dev_.linear_backward(x, params_.at(c.w), c.dy, none, W.at(c.w), W.at(c.b), /*accumulate_dx=*/false, fp32_dw_);
      c.dy = Tensor();  // the caller moved its output gradient in: released as soon as it is used
    }
    reducing.wait();
    if (divide_ && t_size_ > 1) dev_.scale(dxl, 1.0 / t_size_);
    return dxl;
  }

  // Waits for the collectives still in flight when a scope is left by an exception.
  struct InFlight {
    rt::Work& a;
    rt::Work& b;
    InFlight(rt::Work& first, rt::Work& second) : a(first), b(second) {}
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    ~InFlight() {
      for (rt::Work* w : {&a, &b}) {
        try {
          w->wait();
        } catch (...) {  // NOLINT(bugprone-empty-catch): already unwinding from the first failure
        }
      }
    }
  };

  rt::Device& dev_;
  rt::Comm* tp_;
  int t_size_;
  models::ModelSpec model_;
  std::int64_t batch_, heads_, kv_heads_;
  bool sp_, divide_, fp32_dw_, bias_owner_;
  NamedTensors params_;
  std::unique_ptr<AttentionStrategy> attention_;
  HiddenDropout dropout_;
  Saved sv_;
};

[[nodiscard]] std::optional<Refusal> check_megatron(const models::ModelSpec& m, const models::AttnProblem& p,
                                                    const ParallelShape& shape, const Options& o) {
  const int t = shape.tp;
  const auto tp = std::to_string(t);
  if (m.heads % t != 0)
    return Refusal{"parallel.tp", "model.heads " + std::to_string(m.heads) + " is not divisible by tp " + tp +
                                      " (each TP rank holds heads/tp query heads)"};
  if (m.kv_heads % t != 0 && t % m.kv_heads != 0)
    return Refusal{"parallel.tp", "model.kv_heads " + std::to_string(m.kv_heads) + " and tp " + tp +
                                      " do not divide one another (KV heads are split over the TP group, "
                                      "or each held by tp/kv_heads ranks)"};
  if (m.ffn_hidden % t != 0)
    return Refusal{"parallel.tp",
                   "model.ffn_hidden " + std::to_string(m.ffn_hidden) + " is not divisible by tp " + tp};
  if (sequence_parallel(o) && p.seq_len % shape.cp == 0 && (p.seq_len / shape.cp) % t != 0)
    return Refusal{"workload.seq_len",
                   "with sequence parallelism each TP rank holds 1/tp of its CP rank's " +
                       std::to_string(p.seq_len / shape.cp) + " tokens, which tp " + tp +
                       " does not divide (seq_len must be a multiple of cp × tp = " +
                       std::to_string(shape.cp * t) + ")"};
  return std::nullopt;
}

std::vector<ParamShard> megatron_params(const models::ModelSpec& m, int t, int tp, const Options& o) {
  const std::int64_t hd = m.head_dim, q_rows = m.heads / tp * hd, f = m.ffn_hidden / tp;
  const KvHeads kv = kv_heads_of(m.kv_heads, t, tp);
  const int ln_color = sequence_parallel(o) ? 0 : t;
  std::vector<ParamShard> out;
  for (const auto& ps : layer_param_shapes(m)) {
    ParamShard s{ps.name, ps.shape};
    const std::string& n = ps.name;
    if (n == "wq" || n == "bq") s = {n, ps.shape, 0, t * q_rows, q_rows, t};
    if (n == "wk" || n == "bk" || n == "wv" || n == "bv")
      s = {n, ps.shape, 0, kv.first * hd, kv.count * hd, kv.color};
    if (n == "wo") s = {n, ps.shape, 1, t * q_rows, q_rows, t};
    if (n == "w1" || n == "b1" || n == "w3" || n == "b3") s = {n, ps.shape, 0, t * f, f, t};
    if (n == "w2") s = {n, ps.shape, 1, t * f, f, t};
    if (n.rfind("ln", 0) == 0) s.reduce_color = ln_color;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

LayerInfo megatron_layer_info() {
  LayerInfo info;
  info.name = "megatron_sp";
  info.description =
      "Megatron tensor parallelism (Q/K/V and W1 (W3) column-parallel, Wo and W2 row-parallel over parallel.tp "
      "ranks) with or without sequence parallelism; the attention strategy is the context-parallel level";
  info.options = {
      {"sequence_parallel",
       "true: LayerNorm/residual regions hold 1/tp of the tokens, all-gather into and reduce-scatter out of "
       "the parallel blocks (Korthikanti et al. 2022); false: all-reduces (Megatron TP)",
       {"true", "false"},
       "true"},
      {"dx_reduction",
       "the column-parallel blocks' input gradient over the TP group: sum (correct: one sum over the hidden "
       "dimension) or sum_div (that sum divided by tp: deliberately wrong, the contrast to RSA's ÷P)",
       {"sum", "sum_div"},
       "sum"},
      {"gradient_accumulation_fusion",
       "true: each weight-gradient GEMM accumulates into an fp32 main-gradient buffer, its epilogue reading and "
       "writing fp32 (Megatron-LM's default in bf16: --accumulate-allreduce-grads-in-fp32 is forced and the "
       "fusion is on unless --no-gradient-accumulation-fusion): the model state holds 4-byte gradients (2 bytes "
       "more per parameter at model scope); the gradient reduction still moves them in the dtype (Megatron-LM's "
       "moves fp32); 16-bit dtypes only; false: the GEMM stores dW in the dtype",
       {"true", "false"},
       "false"}};
  info.sequence_first = true;
  info.check = check_megatron;
  info.attention_problem = [](const models::AttnProblem& p, int tp, const Options&) {
    models::AttnProblem local = p;
    local.heads = p.heads / tp;
    local.kv_heads = kv_heads_of(p.kv_heads, 0, tp).count;
    return local;
  };
  info.params = megatron_params;
  info.rows = [](const rt::Positions& positions, int t, int tp, const Options& o) {
    if (!sequence_parallel(o) || tp == 1) return positions;
    const std::int64_t n = positions.size() / tp;
    return positions.slice(t * n, n);
  };
  info.create = [](LayerSetup setup, NamedTensors params) -> std::unique_ptr<LayerStrategy> {
    return std::make_unique<MegatronLayer>(std::move(setup), std::move(params));
  };
  return info;
}

}  // namespace spsim::strategies
