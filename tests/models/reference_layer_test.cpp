// Tests of the float64 transformer-layer reference: loop-written forward, identity case, finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/layer_params.hpp"
#include "models/random.hpp"
#include "models/reference.hpp"
#include "runtime/core/error.hpp"
#include "tests/models/finite_difference.hpp"

using spsim::models::LayerParams;
using spsim::models::ModelSpec;
using spsim::models::random_vector;

namespace {

struct LayerCase {
  ModelSpec spec;
  std::int64_t batch, seq;
  bool causal;
};

ModelSpec spec_of(std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                  std::int64_t ffn) {
  ModelSpec m;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.ffn_hidden = ffn;
  return m;
}

ModelSpec swiglu(ModelSpec m) {
  m.mlp = spsim::models::Mlp::swiglu;
  return m;
}

// GQA with hidden != H*D (so Wo's two dims differ), causal and not; MHA with hidden = H*D; batch 1 and 2;
// a SwiGLU MLP.
const LayerCase kCases[] = {
    {spec_of(8, 4, 2, 3, 12), 2, 4, true},
    {spec_of(8, 4, 2, 3, 12), 2, 4, false},
    {spec_of(6, 2, 2, 3, 10), 1, 5, false},
    {swiglu(spec_of(8, 4, 2, 3, 12)), 2, 4, true},
};

LayerParams random_params(const ModelSpec& spec, std::uint64_t seed) {
  LayerParams p = spsim::models::make_layer_params(spec);
  spsim::models::randomize(p, seed);
  return p;
}

// ---- the layer written out with loops, token layout throughout ----------------------------------

std::vector<double> naive_layer_norm(const std::vector<double>& x, std::int64_t n, const LayerParams& p,
                                     const std::string& prefix) {
  const auto& gamma = p.at(prefix + ".gamma").data;
  const auto& beta = p.at(prefix + ".beta").data;
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(n); ++r) {
    const double* row = x.data() + r * static_cast<std::size_t>(n);
    double mean = 0.0;
    for (std::int64_t i = 0; i < n; ++i) mean += row[i] / static_cast<double>(n);
    double var = 0.0;
    for (std::int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean) / static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i) {
      y[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)] =
          (row[i] - mean) / std::sqrt(var + 1e-5) * gamma[static_cast<std::size_t>(i)] +
          beta[static_cast<std::size_t>(i)];
    }
  }
  return y;
}

// y[r, o] = b[o] + Σ_i x[r, i] w[o, i]  (w: [out, in]).
std::vector<double> naive_linear(const std::vector<double>& x, const LayerParams& p,
                                 const std::string& w_name, const std::string& b_name) {
  const auto& w = p.at(w_name);
  const auto& b = p.at(b_name).data;
  const std::size_t out = static_cast<std::size_t>(w.shape[0]);
  const std::size_t in = static_cast<std::size_t>(w.shape[1]);
  std::vector<double> y(x.size() / in * out);
  for (std::size_t r = 0; r < x.size() / in; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double s = b[o];
      for (std::size_t i = 0; i < in; ++i) s += x[r * in + i] * w.data[o * in + i];
      y[r * out + o] = s;
    }
  }
  return y;
}

std::vector<double> add(std::vector<double> a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

struct NaiveLayer {
  std::vector<double> q_tok, o_tok, y;  // q and the attention output in token layout [B, S, H*D]
};

NaiveLayer naive_layer(const LayerCase& c, const LayerParams& p, const std::vector<double>& x) {
  const ModelSpec& m = c.spec;
  NaiveLayer out;
  const auto h1 = naive_layer_norm(x, m.hidden, p, "ln1");
  out.q_tok = naive_linear(h1, p, "wq", "bq");
  const auto k_tok = naive_linear(h1, p, "wk", "bk");
  const auto v_tok = naive_linear(h1, p, "wv", "bv");
  out.o_tok.resize(out.q_tok.size());
  const std::int64_t s = c.seq;
  const std::int64_t d_model = m.head_dim;
  // Token layout: element (b, head h, token i, dim d) of a tensor with n heads is [(b*S + i)*n*D + h*D + d].
  const auto tok = [&](const std::vector<double>& t, std::int64_t n) {
    return [&t, n, s, d_model](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
      return t[static_cast<std::size_t>((b * s + i) * n * d_model + h * d_model + d)];
    };
  };
  spsim::test::NaiveAttention{c.batch, m.heads, m.kv_heads, c.seq, m.head_dim, c.causal}.run(
      tok(out.q_tok, m.heads), tok(k_tok, m.kv_heads), tok(v_tok, m.kv_heads),
      [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d, double o) {
        out.o_tok[static_cast<std::size_t>((b * s + i) * m.heads * d_model + h * d_model + d)] = o;
      },
      [](std::int64_t, std::int64_t, std::int64_t, double) {});
  const auto r1 = add(x, naive_linear(out.o_tok, p, "wo", "bo"));
  const auto h2 = naive_layer_norm(r1, m.hidden, p, "ln2");
  auto g = naive_linear(h2, p, "w1", "b1");
  if (m.mlp == spsim::models::Mlp::swiglu) {  // g = u σ(u) · (h2 W3ᵀ + b3)
    const auto up = naive_linear(h2, p, "w3", "b3");
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * up[i];
  } else {
    for (double& u : g) u = 0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)));
  }
  out.y = add(r1, naive_linear(g, p, "w2", "b2"));
  return out;
}

// Head-layout index of token-layout element (b, s, h, d): [B, S, n, D] permuted to [B, n, S, D].
std::size_t head_index(const LayerCase& c, std::int64_t n, std::int64_t b, std::int64_t s, std::int64_t h,
                       std::int64_t d) {
  return static_cast<std::size_t>(((b * n + h) * c.seq + s) * c.spec.head_dim + d);
}

}  // namespace

TEST_CASE("layer_forward matches the layer written out with loops, including the head layout of q and o") {
  for (const LayerCase& c : kCases) {
    CAPTURE(c.spec.kv_heads);
    CAPTURE(c.causal);
    const LayerParams p = random_params(c.spec, 7);
    const auto x = random_vector(c.batch * c.seq * c.spec.hidden, 8, 1.0);
    const auto ref = spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, p, x);
    const NaiveLayer naive = naive_layer(c, p, x);
    REQUIRE(ref.y.size() == naive.y.size());
    for (std::size_t i = 0; i < ref.y.size(); ++i)
      CHECK(ref.y[i] == doctest::Approx(naive.y[i]).epsilon(1e-12));
    const std::int64_t h_count = c.spec.heads;
    for (std::int64_t b = 0; b < c.batch; ++b) {
      for (std::int64_t s = 0; s < c.seq; ++s) {
        for (std::int64_t h = 0; h < h_count; ++h) {
          for (std::int64_t d = 0; d < c.spec.head_dim; ++d) {
            const auto tok = static_cast<std::size_t>((b * c.seq + s) * h_count * c.spec.head_dim +
                                                      h * c.spec.head_dim + d);
            CHECK(ref.q[head_index(c, h_count, b, s, h, d)] ==
                  doctest::Approx(naive.q_tok[tok]).epsilon(1e-12));
            CHECK(ref.attn[head_index(c, h_count, b, s, h, d)] ==
                  doctest::Approx(naive.o_tok[tok]).epsilon(1e-12));
          }
        }
      }
    }
  }
}

TEST_CASE("with both branch outputs zeroed the layer is the identity, and so is its backward") {
  // Wo = bo = W2 = b2 = 0 make y = x. Then dL/dr1 = dy, no gradient reaches o, so dx = dy and every
  // parameter read before Wo (ln1.*, wq..bv) gets exactly 0, as do w1, b1, ln2.* (g W2ᵀ has W2 = 0).
  // dbo = Σ_rows dy and db2 = Σ_rows dy (column sums), dwo = dyᵀ o and dw2 = dyᵀ g are non-zero.
  const LayerCase& c = kCases[0];
  LayerParams p = random_params(c.spec, 9);
  for (const char* name : {"wo", "bo", "w2", "b2"})
    std::fill(p.at(name).data.begin(), p.at(name).data.end(), 0.0);
  const auto x = random_vector(c.batch * c.seq * c.spec.hidden, 10, 1.0);
  const auto dy = random_vector(x.size(), 11, 1.0);
  const auto y = spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, p, x).y;
  const auto g = spsim::models::layer_backward(c.spec, c.batch, c.seq, c.causal, p, x, dy);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(y[i] == x[i]);
    CHECK(g.dx[i] == dy[i]);
  }
  for (const char* name :
       {"ln1.gamma", "ln1.beta", "wq", "bq", "wk", "bk", "wv", "bv", "ln2.gamma", "ln2.beta", "w1", "b1"}) {
    CAPTURE(name);
    CHECK(spsim::test::norm(g.params.at(name).data) == 0.0);
  }
  const auto hidden = static_cast<std::size_t>(c.spec.hidden);
  for (std::size_t col = 0; col < hidden; ++col) {
    double sum = 0.0;
    for (std::size_t r = 0; r < dy.size() / hidden; ++r) sum += dy[r * hidden + col];
    CHECK(g.params.at("bo").data[col] == doctest::Approx(sum).epsilon(1e-13));
    CHECK(g.params.at("b2").data[col] == doctest::Approx(sum).epsilon(1e-13));
  }
  CHECK(spsim::test::norm(g.params.at("wo").data) > 0.0);
  CHECK(spsim::test::norm(g.params.at("w2").data) > 0.0);
}

TEST_CASE("layer_backward agrees with central differences of sum(R ⊙ y) w.r.t. x and every parameter") {
  for (const LayerCase& c : kCases) {
    CAPTURE(c.spec.kv_heads);
    CAPTURE(c.causal);
    const LayerParams p = random_params(c.spec, 12);
    const auto x = random_vector(c.batch * c.seq * c.spec.hidden, 13, 1.0);
    const auto r = random_vector(x.size(), 14, 1.0);  // L = sum(R ⊙ y): dL/dy = R
    const auto grads = spsim::models::layer_backward(c.spec, c.batch, c.seq, c.causal, p, x, r);
    const auto loss = [&](const LayerParams& params, const std::vector<double>& input) {
      return spsim::test::dot(
          r, spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, params, input).y);
    };
    {
      const auto check = spsim::test::directional_check([&](const auto& xx) { return loss(p, xx); }, x,
                                                        grads.dx, random_vector(x.size(), 15, 1.0));
      CAPTURE(check.analytic);
      CAPTURE(check.numeric);
      CHECK(check.direction_is_informative());
      CHECK(check.relative_error() <= 1e-6);
    }
    REQUIRE(grads.params.tensors.size() == (c.spec.mlp == spsim::models::Mlp::swiglu
                                                ? spsim::models::kSwigluLayerParamNames.size()
                                                : spsim::models::kLayerParamNames.size()));
    for (std::size_t i = 0; i < p.tensors.size(); ++i) {
      const std::string& name = p.tensors[i].name;
      CAPTURE(name);
      REQUIRE(grads.params.tensors[i].name == name);
      if (name == "bk") continue;  // identically zero: its own test case below
      const auto tensor_loss = [&](const std::vector<double>& values) {
        LayerParams moved = p;
        moved.tensors[i].data = values;
        return loss(moved, x);
      };
      const auto check =
          spsim::test::directional_check(tensor_loss, p.tensors[i].data, grads.params.tensors[i].data,
                                         random_vector(p.tensors[i].numel(), 100 + i, 1.0));
      CAPTURE(check.analytic);
      CAPTURE(check.numeric);
      CHECK(check.direction_is_informative());
      CHECK(check.relative_error() <= 1e-6);
    }
  }
}

TEST_CASE("the key bias gets no gradient: softmax is invariant to a shift of a whole score row") {
  // k_j = h1_j Wkᵀ + bk, so s_ij = scale q_i·k_j = scale q_i·(h1_j Wkᵀ) + scale q_i·bk: bk adds the same
  // value to every score of row i, allowed or not, and the row softmax does not change. Hence
  // ∂L/∂bk = 0 exactly; the analytic value is rounding noise and the central difference sees no change.
  for (const LayerCase& c : kCases) {
    CAPTURE(c.causal);
    const LayerParams p = random_params(c.spec, 18);
    const auto x = random_vector(c.batch * c.seq * c.spec.hidden, 19, 1.0);
    const auto r = random_vector(x.size(), 20, 1.0);
    const auto grads = spsim::models::layer_backward(c.spec, c.batch, c.seq, c.causal, p, x, r);
    const double scale_of_gradients = spsim::test::norm(grads.params.at("bq").data);
    CHECK(scale_of_gradients > 1e-3);
    CHECK(spsim::test::norm(grads.params.at("bk").data) <= 1e-12 * scale_of_gradients);
    LayerParams moved = p;
    for (double& b : moved.at("bk").data) b += 0.5;
    const auto y0 = spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, p, x).y;
    const auto y1 = spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, moved, x).y;
    for (std::size_t i = 0; i < y0.size(); ++i) CHECK(y1[i] == doctest::Approx(y0[i]).epsilon(1e-12));
  }
}

TEST_CASE("layer rejects bad specs, mismatched parameters and inputs") {
  const LayerCase& c = kCases[0];
  const LayerParams p = random_params(c.spec, 16);
  const auto x = random_vector(c.batch * c.seq * c.spec.hidden, 17, 1.0);
  CHECK_NOTHROW((void)spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, p, x));
  ModelSpec bad = c.spec;
  bad.kv_heads = 3;  // 4 heads over 3 kv heads
  CHECK_THROWS_AS((void)spsim::models::layer_forward(bad, c.batch, c.seq, c.causal, p, x), spsim::InputError);
  CHECK_THROWS_AS((void)spsim::models::layer_forward(c.spec, 0, c.seq, c.causal, p, x), spsim::InputError);
  ModelSpec wider = c.spec;
  wider.ffn_hidden += 1;  // p's w1 no longer matches
  const auto x_short = std::vector<double>(x.begin(), x.end() - 1);
  CHECK_THROWS_AS((void)spsim::models::layer_forward(wider, c.batch, c.seq, c.causal, p, x),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)spsim::models::layer_forward(c.spec, c.batch, c.seq, c.causal, p, x_short),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)spsim::models::layer_backward(c.spec, c.batch, c.seq, c.causal, p, x, x_short),
                  std::invalid_argument);
}
