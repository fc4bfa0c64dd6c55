// Float64 reference forward/backward of the attention core and the pre-LN layer (formulas in reference.hpp).
#include "models/reference.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/core/error.hpp"

namespace spsim::models {

namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;
using Idx = Eigen::Index;
using ConstMatMap = Eigen::Map<const Mat>;
using MatMap = Eigen::Map<Mat>;
using ConstRowMap = Eigen::Map<const Eigen::RowVectorXd>;
using RowMap = Eigen::Map<Eigen::RowVectorXd>;

void require_size(std::string_view what, std::size_t got, std::int64_t want) {
  if (static_cast<std::int64_t>(got) != want) {
    throw std::invalid_argument(std::string(what) + " has " + std::to_string(got) + " elements, expected " +
                                std::to_string(want));
  }
}

// ---- attention core ---------------------------------------------------------------------------

// Matrix `index` (rows × cols) of a flat [batch, rows, cols] tensor.
ConstMatMap block(std::span<const double> t, Idx index, Idx rows, Idx cols) {
  return {t.data() + index * rows * cols, rows, cols};
}
MatMap block(std::vector<double>& t, Idx index, Idx rows, Idx cols) {
  return {t.data() + index * rows * cols, rows, cols};
}

// GQA: batch index b*H + h of q reads kv batch index b*Hkv + h / (H/Hkv).
Idx kv_index(const AttnProblem& p, Idx bh) {
  const Idx b = bh / p.heads;
  const Idx h = bh % p.heads;
  return b * p.kv_heads + h / (p.heads / p.kv_heads);
}

// Row softmax of scale · q kᵀ over the allowed keys (masked entries exactly 0); lse_row[i] receives
// log Σ exp of row i's allowed scores. Subtracting the row max first keeps exp() from overflowing.
// `p` is an output so that callers looping over heads reuse one S×S buffer (large fresh allocations
// cost page faults that dominate a big reference run).
void attention_probs(const ConstMatMap& q, const ConstMatMap& k, double scale, const AttnProblem& problem,
                     double* lse_row, Mat& p) {
  // Eigen hands the scale to its GEMM kernel as alpha: one pass less over the S×S matrix.
  p.noalias() = scale * (q * k.transpose());
  const Idx cols = p.cols();
  for (Idx i = 0; i < p.rows(); ++i) {
    // Every mask lets query i see one interval of keys, which holds i itself (mask_bounds.hpp).
    const auto [lo, hi] = problem.bounds.key_range(i, problem.causal, cols);
    auto kept = p.row(i).segment(lo, hi - lo + 1);
    const double row_max = kept.maxCoeff();
    kept = (kept.array() - row_max).exp().matrix();
    p.row(i).head(lo).setZero();
    p.row(i).tail(cols - 1 - hi).setZero();
    const double sum = kept.sum();
    kept /= sum;
    lse_row[i] = row_max + std::log(sum);
  }
}

double attention_scale(const AttnProblem& p) {
  return 1.0 / std::sqrt(static_cast<double>(p.head_dim));
}

void check_attention_inputs(const AttnProblem& problem, std::span<const double> q, std::span<const double> k,
                            std::span<const double> v) {
  check_attention_problem(problem);
  require_size("attention q", q.size(), q_numel(problem));
  require_size("attention k", k.size(), kv_numel(problem));
  require_size("attention v", v.size(), kv_numel(problem));
}

// ---- layer pieces -----------------------------------------------------------------------------

ConstMatMap mat(const NamedTensor& t) {
  return {t.data.data(), t.shape[0], t.shape[1]};
}
ConstRowMap row(const NamedTensor& t) {
  return {t.data.data(), t.shape[0]};
}
MatMap mat(NamedTensor& t) {
  return {t.data.data(), t.shape[0], t.shape[1]};
}
RowMap row(NamedTensor& t) {
  return {t.data.data(), t.shape[0]};
}

std::vector<double> flat(const Mat& m) {
  return {m.data(), m.data() + m.size()};
}

// Column sums evaluated into an Eigen-owned (aligned) row vector. Evaluated straight into a Map of a
// std::vector, Eigen's vectorised traversal depends on that buffer's address, and so do the last bits
// of the sums: the reference would not be bit-reproducible across runs.
Eigen::RowVectorXd colwise_sum(const Mat& m) {
  Eigen::RowVectorXd out = m.colwise().sum();
  return out;
}

// y = x wᵀ + b (nn.Linear).
Mat linear(const Mat& x, const NamedTensor& w, const NamedTensor& b) {
  Mat y = x * mat(w).transpose();
  y.rowwise() += row(b);
  return y;
}

// Accumulates dw += dyᵀ x and db += Σ_rows dy; returns dx = dy w.
Mat linear_backward(const Mat& x, const NamedTensor& w, const Mat& dy, NamedTensor& dw, NamedTensor& db) {
  mat(dw).noalias() += dy.transpose() * x;
  row(db) += colwise_sum(dy);
  return dy * mat(w);
}

struct LayerNormResult {
  Mat y;
  Mat x_hat;  // (z − mean) · rstd
  Vec rstd;   // 1/√(var + eps) per row
};

LayerNormResult layer_norm(const Mat& z, const NamedTensor& gamma, const NamedTensor& beta) {
  const Vec mean = z.rowwise().mean();
  const Mat centered = z.colwise() - mean;
  const Vec var = centered.array().square().rowwise().mean();
  LayerNormResult r;
  r.rstd = (var.array() + kLayerNormEps).rsqrt().matrix();
  r.x_hat = r.rstd.asDiagonal() * centered;
  r.y = (r.x_hat.array().rowwise() * row(gamma).array()).matrix();
  r.y.rowwise() += row(beta);
  return r;
}

// Accumulates dgamma, dbeta; returns dz (formula in reference.hpp).
Mat layer_norm_backward(const LayerNormResult& ln, const NamedTensor& gamma, const Mat& dy,
                        NamedTensor& dgamma, NamedTensor& dbeta) {
  row(dgamma) += colwise_sum((dy.array() * ln.x_hat.array()).matrix());
  row(dbeta) += colwise_sum(dy);
  const Mat dx_hat = (dy.array().rowwise() * row(gamma).array()).matrix();
  const Vec mean_dx_hat = dx_hat.rowwise().mean();
  const Vec mean_dx_hat_x_hat = (dx_hat.array() * ln.x_hat.array()).rowwise().mean();
  Mat dz = dx_hat.colwise() - mean_dx_hat;
  dz -= mean_dx_hat_x_hat.asDiagonal() * ln.x_hat;
  return ln.rstd.asDiagonal() * dz;
}

double normal_cdf(double x) {
  return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
}
double normal_pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
}

Mat gelu(const Mat& u) {
  return u.unaryExpr([](double x) { return x * normal_cdf(x); });
}
Mat gelu_backward(const Mat& u, const Mat& dg) {
  return (dg.array() * u.unaryExpr([](double x) { return normal_cdf(x) + x * normal_pdf(x); }).array())
      .matrix();
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
// SwiGLU's gate: g = silu(u) ⊙ v, silu(u) = u σ(u).
Mat swiglu(const Mat& u, const Mat& v) {
  return (u.unaryExpr([](double x) { return x * sigmoid(x); }).array() * v.array()).matrix();
}
// du = dg ⊙ v ⊙ σ(u)(1 + u(1 − σ(u))), dv = dg ⊙ silu(u).
std::pair<Mat, Mat> swiglu_backward(const Mat& u, const Mat& v, const Mat& dg) {
  const Mat du =
      (dg.array() * v.array() *
       u.unaryExpr([](double x) { return sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))); }).array())
          .matrix();
  const Mat dv = (dg.array() * u.unaryExpr([](double x) { return x * sigmoid(x); }).array()).matrix();
  return {du, dv};
}

struct LayerDims {
  Idx batch, seq, hidden, heads, kv_heads, head_dim;
  [[nodiscard]] Idx rows() const { return batch * seq; }
  [[nodiscard]] AttnProblem problem(bool causal, const rt::MaskBounds& bounds) const {
    return AttnProblem{batch, heads, kv_heads, head_dim, seq, causal, bounds};
  }
};

// [B*S, n*D] token layout → [B*n, S, D] head layout (view [B, S, n, D], permute to [B, n, S, D]).
std::vector<double> to_heads(const Mat& t, const LayerDims& d, Idx n) {
  std::vector<double> out(static_cast<std::size_t>(t.size()));
  for (Idx b = 0; b < d.batch; ++b) {
    for (Idx h = 0; h < n; ++h) {
      block(out, b * n + h, d.seq, d.head_dim) = t.block(b * d.seq, h * d.head_dim, d.seq, d.head_dim);
    }
  }
  return out;
}

// Inverse of to_heads: [B*n, S, D] → [B*S, n*D].
Mat from_heads(std::span<const double> t, const LayerDims& d, Idx n) {
  Mat out(d.rows(), n * d.head_dim);
  for (Idx b = 0; b < d.batch; ++b) {
    for (Idx h = 0; h < n; ++h) {
      out.block(b * d.seq, h * d.head_dim, d.seq, d.head_dim) = block(t, b * n + h, d.seq, d.head_dim);
    }
  }
  return out;
}

LayerDims check_layer_inputs(const ModelSpec& spec, std::int64_t batch, std::int64_t seq,
                             const LayerParams& params, std::span<const double> x) {
  check_layer_spec(spec);
  if (batch <= 0) throw InputError("workload.batch", "must be positive, got " + std::to_string(batch));
  if (seq <= 0) throw InputError("workload.seq_len", "must be positive, got " + std::to_string(seq));
  const LayerParams expected = make_layer_params(spec);
  require_size("LayerParams tensor count", params.tensors.size(),
               static_cast<std::int64_t>(expected.tensors.size()));
  for (std::size_t i = 0; i < expected.tensors.size(); ++i) {
    const NamedTensor& got = params.tensors[i];
    const NamedTensor& want = expected.tensors[i];
    if (got.name != want.name || got.shape != want.shape || got.data.size() != want.data.size()) {
      throw std::invalid_argument("LayerParams tensor " + std::to_string(i) + " is '" + got.name + "' " +
                                  rt::to_string(got.shape) + ", expected '" + want.name + "' " +
                                  rt::to_string(want.shape));
    }
  }
  require_size("layer x", x.size(), batch * seq * spec.hidden);
  return LayerDims{batch, seq, spec.hidden, spec.heads, spec.kv_heads, spec.head_dim};
}

// Everything the backward needs, in token layout [B*S, ·] unless noted.
struct LayerCache {
  Mat x;
  LayerNormResult ln1;
  std::vector<double> q, k, v, attn;  // head layout
  Mat o_tok;                          // attention output back in token layout [B*S, H*D]
  Mat r1;
  LayerNormResult ln2;
  Mat u, up, g;  // MLP: u = W1 h2 (the gate under SwiGLU), up = W3 h2 (SwiGLU only), g its activation
  Mat y;
};

LayerCache run_layer_forward(const LayerDims& d, bool causal, const rt::MaskBounds& bounds, Mlp mlp,
                             const LayerParams& p, std::span<const double> x) {
  LayerCache c;
  c.x = ConstMatMap(x.data(), d.rows(), d.hidden);
  c.ln1 = layer_norm(c.x, p.at("ln1.gamma"), p.at("ln1.beta"));
  c.q = to_heads(linear(c.ln1.y, p.at("wq"), p.at("bq")), d, d.heads);
  c.k = to_heads(linear(c.ln1.y, p.at("wk"), p.at("bk")), d, d.kv_heads);
  c.v = to_heads(linear(c.ln1.y, p.at("wv"), p.at("bv")), d, d.kv_heads);
  c.attn = attention_forward(d.problem(causal, bounds), c.q, c.k, c.v).o;
  c.o_tok = from_heads(c.attn, d, d.heads);
  c.r1 = c.x + linear(c.o_tok, p.at("wo"), p.at("bo"));
  c.ln2 = layer_norm(c.r1, p.at("ln2.gamma"), p.at("ln2.beta"));
  c.u = linear(c.ln2.y, p.at("w1"), p.at("b1"));
  if (mlp == Mlp::swiglu) {
    c.up = linear(c.ln2.y, p.at("w3"), p.at("b3"));
    c.g = swiglu(c.u, c.up);
  } else {
    c.g = gelu(c.u);
  }
  c.y = c.r1 + linear(c.g, p.at("w2"), p.at("b2"));
  return c;
}

}  // namespace

// ---- attention core: public -------------------------------------------------------------------

void check_attention_problem(const AttnProblem& problem) {
  const std::pair<const char*, std::int64_t> fields[] = {{"batch", problem.batch},
                                                         {"heads", problem.heads},
                                                         {"kv_heads", problem.kv_heads},
                                                         {"head_dim", problem.head_dim},
                                                         {"seq_len", problem.seq_len}};
  for (const auto& [name, value] : fields) {
    if (value <= 0) {
      throw InputError(std::string("attention.") + name, "must be positive, got " + std::to_string(value));
    }
  }
  if (problem.heads % problem.kv_heads != 0) {
    throw InputError("attention.kv_heads", "heads (" + std::to_string(problem.heads) +
                                               ") must be a multiple of kv_heads, got kv_heads = " +
                                               std::to_string(problem.kv_heads));
  }
  if (problem.bounds.has_documents() && problem.bounds.documents_length() != problem.seq_len)
    throw InputError("attention.mask.documents", "the document lengths sum to " +
                                                     std::to_string(problem.bounds.documents_length()) +
                                                     ", not the sequence length " +
                                                     std::to_string(problem.seq_len));
}

std::int64_t q_numel(const AttnProblem& p) {
  return p.batch * p.heads * p.seq_len * p.head_dim;
}
std::int64_t kv_numel(const AttnProblem& p) {
  return p.batch * p.kv_heads * p.seq_len * p.head_dim;
}

AttnRefOut attention_forward(const AttnProblem& problem, std::span<const double> q, std::span<const double> k,
                             std::span<const double> v) {
  check_attention_inputs(problem, q, k, v);
  const Idx s = problem.seq_len;
  const Idx d = problem.head_dim;
  AttnRefOut out;
  out.o.resize(q.size());
  out.lse.resize(static_cast<std::size_t>(problem.batch * problem.heads * s));
  Mat p;
  for (Idx bh = 0; bh < problem.batch * problem.heads; ++bh) {
    const Idx kv = kv_index(problem, bh);
    attention_probs(block(q, bh, s, d), block(k, kv, s, d), attention_scale(problem), problem,
                    out.lse.data() + bh * s, p);
    block(out.o, bh, s, d).noalias() = p * block(v, kv, s, d);
  }
  return out;
}

AttnRefGrads attention_backward(const AttnProblem& problem, std::span<const double> q,
                                std::span<const double> k, std::span<const double> v,
                                std::span<const double> d_o) {
  check_attention_inputs(problem, q, k, v);
  require_size("attention d_o", d_o.size(), q_numel(problem));
  const Idx s = problem.seq_len;
  const Idx d = problem.head_dim;
  const double scale = attention_scale(problem);
  AttnRefGrads g{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0),
                 std::vector<double>(v.size(), 0.0)};
  std::vector<double> lse_row(static_cast<std::size_t>(s));
  Mat p, ds;          // S×S buffers reused across heads
  Eigen::MatrixXd t;  // S×D, column-major
  for (Idx bh = 0; bh < problem.batch * problem.heads; ++bh) {
    const Idx kv = kv_index(problem, bh);
    const ConstMatMap q_bh = block(q, bh, s, d);
    const ConstMatMap k_kv = block(k, kv, s, d);
    const ConstMatMap d_o_bh = block(d_o, bh, s, d);
    attention_probs(q_bh, k_kv, scale, problem, lse_row.data(), p);
    // Pᵀ and dSᵀ products go through a column-major temporary, where Eigen packs P and dS from
    // contiguous runs (see rt::cpu::gemm: read row-major and transposed, they cost a TLB miss per row).
    t.noalias() = p.transpose() * d_o_bh;
    block(g.dv, kv, s, d) += t;
    // dP, then dS = P ⊙ (dP − rowsum(dP ⊙ P)) in place, one row at a time while the row is in cache.
    ds.noalias() = d_o_bh * block(v, kv, s, d).transpose();
    for (Idx i = 0; i < s; ++i) {
      const double row_dot = (ds.row(i).array() * p.row(i).array()).sum();
      ds.row(i).array() = p.row(i).array() * (ds.row(i).array() - row_dot);
    }
    block(g.dq, bh, s, d).noalias() = scale * ds * k_kv;
    t.noalias() = scale * ds.transpose() * q_bh;
    block(g.dk, kv, s, d) += t;
  }
  return g;
}

// ---- layer: public ----------------------------------------------------------------------------

LayerRefOut layer_forward(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, bool causal,
                          const LayerParams& params, std::span<const double> x, const rt::MaskBounds& bounds) {
  const LayerDims d = check_layer_inputs(spec, batch, seq, params, x);
  LayerCache c = run_layer_forward(d, causal, bounds, spec.mlp, params, x);
  return LayerRefOut{flat(c.y),         flat(c.ln1.y), std::move(c.q), std::move(c.k), std::move(c.v),
                     std::move(c.attn), flat(c.r1),    flat(c.ln2.y),  flat(c.u)};
}

LayerRefGrads layer_backward(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, bool causal,
                             const LayerParams& params, std::span<const double> x,
                             std::span<const double> dy, const rt::MaskBounds& bounds) {
  const LayerDims d = check_layer_inputs(spec, batch, seq, params, x);
  require_size("layer dy", dy.size(), static_cast<std::int64_t>(x.size()));
  const LayerCache c = run_layer_forward(d, causal, bounds, spec.mlp, params, x);
  const LayerParams& p = params;
  LayerRefGrads grads;
  grads.params = make_layer_params(spec);
  LayerParams& g = grads.params;
  const Mat d_y = ConstMatMap(dy.data(), d.rows(), d.hidden);

  // MLP branch: y = r1 + W2 act(W1 LN2(r1) [, W3 LN2(r1)]); the residual passes d_y straight to r1.
  const Mat d_g = linear_backward(c.g, p.at("w2"), d_y, g.at("w2"), g.at("b2"));
  Mat d_h2;
  if (spec.mlp == Mlp::swiglu) {
    const auto [d_u, d_v] = swiglu_backward(c.u, c.up, d_g);
    d_h2 = linear_backward(c.ln2.y, p.at("w1"), d_u, g.at("w1"), g.at("b1"));
    d_h2 += linear_backward(c.ln2.y, p.at("w3"), d_v, g.at("w3"), g.at("b3"));
  } else {
    d_h2 = linear_backward(c.ln2.y, p.at("w1"), gelu_backward(c.u, d_g), g.at("w1"), g.at("b1"));
  }
  const Mat d_r1 =
      d_y + layer_norm_backward(c.ln2, p.at("ln2.gamma"), d_h2, g.at("ln2.gamma"), g.at("ln2.beta"));

  // Attention branch: r1 = x + Wo attn(Q, K, V); Q, K, V all read LN1(x).
  const Mat d_o_tok = linear_backward(c.o_tok, p.at("wo"), d_r1, g.at("wo"), g.at("bo"));
  AttnRefGrads ag = attention_backward(d.problem(causal, bounds), c.q, c.k, c.v, to_heads(d_o_tok, d, d.heads));
  Mat d_h1 = linear_backward(c.ln1.y, p.at("wq"), from_heads(ag.dq, d, d.heads), g.at("wq"), g.at("bq"));
  d_h1 += linear_backward(c.ln1.y, p.at("wk"), from_heads(ag.dk, d, d.kv_heads), g.at("wk"), g.at("bk"));
  d_h1 += linear_backward(c.ln1.y, p.at("wv"), from_heads(ag.dv, d, d.kv_heads), g.at("wv"), g.at("bv"));
  const Mat d_x =
      d_r1 + layer_norm_backward(c.ln1, p.at("ln1.gamma"), d_h1, g.at("ln1.gamma"), g.at("ln1.beta"));

  grads.dx = flat(d_x);
  grads.dq = std::move(ag.dq);
  grads.dk = std::move(ag.dk);
  grads.dv = std::move(ag.dv);
  return grads;
}

}  // namespace spsim::models
