// Tests of the float64 attention-core reference: loop-written forward, properties, finite differences.
#include "models/reference.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "models/random.hpp"
#include "runtime/core/error.hpp"
#include "tests/models/finite_difference.hpp"

using spsim::models::attention_backward;
using spsim::models::attention_forward;
using spsim::models::AttnProblem;
using spsim::models::kv_numel;
using spsim::models::q_numel;
using spsim::models::random_vector;
using spsim::test::directional_check;

namespace {

struct AttnInputs {
  std::vector<double> q, k, v;
};

AttnInputs random_inputs(const AttnProblem& p, std::uint64_t seed) {
  return {random_vector(q_numel(p), seed, 1.0), random_vector(kv_numel(p), seed + 1, 1.0),
          random_vector(kv_numel(p), seed + 2, 1.0)};
}

// Index of element (bh, i, d) of a [batch, S, D] tensor.
std::size_t at(const AttnProblem& p, std::int64_t bh, std::int64_t i, std::int64_t d) {
  return static_cast<std::size_t>((bh * p.seq_len + i) * p.head_dim + d);
}

// The table every attention test sweeps: MHA, GQA, MQA; causal and not; batch 1 and 2.
const AttnProblem kProblems[] = {
    {2, 4, 4, 3, 5, false},  // MHA, batch 2
    {2, 4, 4, 3, 5, true},   // MHA causal
    {2, 4, 2, 3, 5, true},   // GQA, groups of 2
    {1, 6, 2, 2, 4, false},  // GQA, groups of 3
    {2, 4, 1, 4, 3, true},   // MQA: every query head reads kv head 0 of its sample
};

}  // namespace

TEST_CASE("attention_forward matches softmax written out with loops") {
  for (const AttnProblem& p : kProblems) {
    CAPTURE(p.batch);
    CAPTURE(p.heads);
    CAPTURE(p.kv_heads);
    CAPTURE(p.causal);
    const AttnInputs in = random_inputs(p, 11);
    const auto ref = attention_forward(p, in.q, in.k, in.v);
    std::vector<double> o(in.q.size());
    std::vector<double> lse(static_cast<std::size_t>(p.batch * p.heads * p.seq_len));
    // Head layout: batch index of (b, h) is b*H + h for q/o, b*Hkv + h for k/v.
    const auto read_q = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
      return in.q[at(p, b * p.heads + h, i, d)];
    };
    const auto read_k = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
      return in.k[at(p, b * p.kv_heads + h, i, d)];
    };
    const auto read_v = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d) {
      return in.v[at(p, b * p.kv_heads + h, i, d)];
    };
    spsim::test::NaiveAttention{p.batch, p.heads, p.kv_heads, p.seq_len, p.head_dim, p.causal}.run(
        read_q, read_k, read_v,
        [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t d, double x) {
          o[at(p, b * p.heads + h, i, d)] = x;
        },
        [&](std::int64_t b, std::int64_t h, std::int64_t i, double x) {
          lse[static_cast<std::size_t>((b * p.heads + h) * p.seq_len + i)] = x;
        });
    REQUIRE(ref.o.size() == o.size());
    REQUIRE(ref.lse.size() == lse.size());
    for (std::size_t i = 0; i < o.size(); ++i) CHECK(ref.o[i] == doctest::Approx(o[i]).epsilon(1e-12));
    for (std::size_t i = 0; i < lse.size(); ++i) CHECK(ref.lse[i] == doctest::Approx(lse[i]).epsilon(1e-12));
  }
}

TEST_CASE("causal attention: the first query sees only key 0, so its output is v of token 0") {
  // softmax over a single allowed score is [1], so o_0 = v_0 and lse_0 = scale q_0·k_0 exactly.
  const AttnProblem p{2, 4, 2, 3, 5, true};
  const AttnInputs in = random_inputs(p, 21);
  const auto ref = attention_forward(p, in.q, in.k, in.v);
  const double scale = 1.0 / std::sqrt(3.0);
  for (std::int64_t bh = 0; bh < p.batch * p.heads; ++bh) {
    const std::int64_t kv = (bh / p.heads) * p.kv_heads + (bh % p.heads) / (p.heads / p.kv_heads);
    double qk = 0.0;
    for (std::int64_t d = 0; d < p.head_dim; ++d) {
      CHECK(ref.o[at(p, bh, 0, d)] == doctest::Approx(in.v[at(p, kv, 0, d)]).epsilon(1e-14));
      qk += in.q[at(p, bh, 0, d)] * in.k[at(p, kv, 0, d)];
    }
    CHECK(ref.lse[static_cast<std::size_t>(bh * p.seq_len)] == doctest::Approx(scale * qk).epsilon(1e-13));
  }
}

TEST_CASE("identical keys give uniform attention: o is the mean of the visible v rows") {
  // All scores of a row are equal, so p_ij = 1 / (number of allowed keys).
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    const AttnProblem p{1, 2, 1, 2, 4, causal};
    AttnInputs in = random_inputs(p, 31);
    for (std::int64_t j = 0; j < p.seq_len; ++j) {
      for (std::int64_t d = 0; d < p.head_dim; ++d) in.k[at(p, 0, j, d)] = in.k[at(p, 0, 0, d)];
    }
    const auto ref = attention_forward(p, in.q, in.k, in.v);
    for (std::int64_t bh = 0; bh < p.heads; ++bh) {
      for (std::int64_t i = 0; i < p.seq_len; ++i) {
        const std::int64_t keys = causal ? i + 1 : p.seq_len;
        for (std::int64_t d = 0; d < p.head_dim; ++d) {
          double mean = 0.0;
          for (std::int64_t j = 0; j < keys; ++j) mean += in.v[at(p, 0, j, d)] / static_cast<double>(keys);
          CHECK(ref.o[at(p, bh, i, d)] == doctest::Approx(mean).epsilon(1e-13));
        }
      }
    }
  }
}

TEST_CASE("GQA equals MHA with each kv head repeated over its group; dk, dv sum over the group") {
  const AttnProblem gqa{2, 6, 2, 3, 4, true};
  AttnProblem mha = gqa;
  mha.kv_heads = gqa.heads;
  const AttnInputs in = random_inputs(gqa, 41);
  const std::int64_t group = gqa.heads / gqa.kv_heads;
  AttnInputs rep{in.q, std::vector<double>(in.q.size()), std::vector<double>(in.q.size())};
  for (std::int64_t b = 0; b < gqa.batch; ++b) {
    for (std::int64_t h = 0; h < gqa.heads; ++h) {
      for (std::int64_t i = 0; i < gqa.seq_len; ++i) {
        for (std::int64_t d = 0; d < gqa.head_dim; ++d) {
          rep.k[at(mha, b * gqa.heads + h, i, d)] = in.k[at(gqa, b * gqa.kv_heads + h / group, i, d)];
          rep.v[at(mha, b * gqa.heads + h, i, d)] = in.v[at(gqa, b * gqa.kv_heads + h / group, i, d)];
        }
      }
    }
  }
  const auto d_o = random_vector(q_numel(gqa), 42, 1.0);
  const auto o_gqa = attention_forward(gqa, in.q, in.k, in.v);
  const auto o_mha = attention_forward(mha, rep.q, rep.k, rep.v);
  for (std::size_t i = 0; i < o_gqa.o.size(); ++i)
    CHECK(o_gqa.o[i] == doctest::Approx(o_mha.o[i]).epsilon(1e-13));
  const auto g_gqa = attention_backward(gqa, in.q, in.k, in.v, d_o);
  const auto g_mha = attention_backward(mha, rep.q, rep.k, rep.v, d_o);
  for (std::size_t i = 0; i < g_gqa.dq.size(); ++i)
    CHECK(g_gqa.dq[i] == doctest::Approx(g_mha.dq[i]).epsilon(1e-12));
  for (std::int64_t b = 0; b < gqa.batch; ++b) {
    for (std::int64_t kvh = 0; kvh < gqa.kv_heads; ++kvh) {
      for (std::int64_t i = 0; i < gqa.seq_len; ++i) {
        for (std::int64_t d = 0; d < gqa.head_dim; ++d) {
          double dk = 0.0;
          double dv = 0.0;
          for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
            dk += g_mha.dk[at(mha, b * gqa.heads + h, i, d)];
            dv += g_mha.dv[at(mha, b * gqa.heads + h, i, d)];
          }
          CHECK(g_gqa.dk[at(gqa, b * gqa.kv_heads + kvh, i, d)] == doctest::Approx(dk).epsilon(1e-12));
          CHECK(g_gqa.dv[at(gqa, b * gqa.kv_heads + kvh, i, d)] == doctest::Approx(dv).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("attention_backward agrees with central differences of sum(R ⊙ o) along random directions") {
  for (const AttnProblem& p : kProblems) {
    CAPTURE(p.batch);
    CAPTURE(p.heads);
    CAPTURE(p.kv_heads);
    CAPTURE(p.causal);
    const AttnInputs in = random_inputs(p, 51);
    const auto r = random_vector(q_numel(p), 52, 1.0);  // loss L = sum(R ⊙ o), so dL/do = R
    const auto grads = attention_backward(p, in.q, in.k, in.v, r);
    const auto loss = [&](const std::vector<double>& q, const std::vector<double>& k,
                          const std::vector<double>& v) {
      return spsim::test::dot(r, attention_forward(p, q, k, v).o);
    };
    const auto u_q = random_vector(q_numel(p), 53, 1.0);
    const auto u_kv = random_vector(kv_numel(p), 54, 1.0);
    const spsim::test::DirectionalCheck checks[] = {
        directional_check([&](const auto& q) { return loss(q, in.k, in.v); }, in.q, grads.dq, u_q),
        directional_check([&](const auto& k) { return loss(in.q, k, in.v); }, in.k, grads.dk, u_kv),
        directional_check([&](const auto& v) { return loss(in.q, in.k, v); }, in.v, grads.dv, u_kv),
    };
    for (const auto& c : checks) {
      CAPTURE(c.analytic);
      CAPTURE(c.numeric);
      CHECK(c.direction_is_informative());
      CHECK(c.relative_error() <= 1e-6);
    }
  }
}

TEST_CASE("the directional check notices a gradient that is off by a uniform factor") {
  // The RSA bug scales dq by 1/P; with P = 8 the directional derivative is off by 7/8 in relative terms.
  const AttnProblem p{1, 2, 2, 3, 4, false};
  const AttnInputs in = random_inputs(p, 61);
  const auto r = random_vector(q_numel(p), 62, 1.0);
  auto dq = attention_backward(p, in.q, in.k, in.v, r).dq;
  for (double& x : dq) x /= 8.0;
  const auto check = directional_check(
      [&](const auto& q) { return spsim::test::dot(r, attention_forward(p, q, in.k, in.v).o); }, in.q, dq,
      random_vector(q_numel(p), 63, 1.0));
  CHECK(check.numeric / check.analytic == doctest::Approx(8.0).epsilon(1e-6));
  CHECK(check.relative_error() > 1e-6);
}

TEST_CASE("attention rejects inconsistent problems and inputs") {
  const AttnProblem bad_group{1, 4, 3, 2, 2, false};  // 4 heads cannot be split over 3 kv heads
  const std::vector<double> x(24, 0.0);
  CHECK_THROWS_AS((void)attention_forward(bad_group, x, x, x), spsim::InputError);
  const AttnProblem zero_seq{1, 2, 2, 2, 0, false};
  CHECK_THROWS_AS((void)attention_forward(zero_seq, {}, {}, {}), spsim::InputError);
  const AttnProblem p{1, 2, 1, 2, 3, false};  // q needs 12 values, k and v 6
  const std::vector<double> q(12, 0.0);
  const std::vector<double> kv(6, 0.0);
  CHECK_NOTHROW((void)attention_forward(p, q, kv, kv));
  CHECK_THROWS_AS((void)attention_forward(p, kv, kv, kv), std::invalid_argument);
  CHECK_THROWS_AS((void)attention_backward(p, q, kv, kv, kv), std::invalid_argument);
}

namespace {

// Rows [first, first + len) of every batch index of a [batch, S, D] tensor, as a [batch, len, D] tensor.
std::vector<double> rows_of(const std::vector<double>& t, std::int64_t batch, std::int64_t s, std::int64_t d,
                            std::int64_t first, std::int64_t len) {
  std::vector<double> out;
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = first; i < first + len; ++i)
      for (std::int64_t x = 0; x < d; ++x) out.push_back(t[static_cast<std::size_t>((b * s + i) * d + x)]);
  return out;
}

}  // namespace

// A document mask is attention run on each document alone (documents never see each other): the
// reference over the packed sequence equals the plain causal reference per document, forward and
// backward.
TEST_CASE("document_causal attention is causal attention per document") {
  const std::vector<std::int64_t> lengths{4, 1, 6, 2};
  AttnProblem packed{2, 4, 2, 3, 13, true, spsim::rt::MaskBounds(lengths, 0)};
  const AttnInputs in = random_inputs(packed, 31);
  const auto d_o = random_vector(q_numel(packed), 34, 1.0);
  const auto fwd = attention_forward(packed, in.q, in.k, in.v);
  const auto bwd = attention_backward(packed, in.q, in.k, in.v, d_o);
  std::int64_t first = 0;
  for (const std::int64_t len : lengths) {
    CAPTURE(first);
    const AttnProblem doc{2, 4, 2, 3, len, true};
    const auto part = [&](const std::vector<double>& t, std::int64_t bh) {
      return rows_of(t, bh, packed.seq_len, packed.head_dim, first, len);
    };
    const auto q = part(in.q, 8), k = part(in.k, 4), v = part(in.v, 4);
    const auto f = attention_forward(doc, q, k, v);
    const auto b = attention_backward(doc, q, k, v, part(d_o, 8));
    const auto near = [](const std::vector<double>& x, const std::vector<double>& y) {
      REQUIRE(x.size() == y.size());
      for (std::size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-13));
    };
    near(part(fwd.o, 8), f.o);
    near(rows_of(fwd.lse, 8, packed.seq_len, 1, first, len), f.lse);
    near(part(bwd.dq, 8), b.dq);
    near(part(bwd.dk, 4), b.dk);
    near(part(bwd.dv, 4), b.dv);
    first += len;
  }
}

// A causal window of 1 leaves every query its own key: o_i = v_i and lse_i = scale q_i·k_i exactly;
// a window as long as the sequence is the plain mask.
TEST_CASE("sliding-window attention in closed form") {
  AttnProblem p{1, 2, 2, 3, 7, true, spsim::rt::MaskBounds({}, 1)};
  const AttnInputs in = random_inputs(p, 41);
  const auto out = attention_forward(p, in.q, in.k, in.v);
  const double scale = 1.0 / std::sqrt(3.0);
  for (std::int64_t bh = 0; bh < 2; ++bh)
    for (std::int64_t i = 0; i < 7; ++i) {
      double dot = 0;
      for (std::int64_t x = 0; x < 3; ++x) {
        CHECK(out.o[at(p, bh, i, x)] == doctest::Approx(in.v[at(p, bh, i, x)]).epsilon(1e-15));
        dot += in.q[at(p, bh, i, x)] * in.k[at(p, bh, i, x)];
      }
      CHECK(out.lse[static_cast<std::size_t>(bh * 7 + i)] == doctest::Approx(scale * dot).epsilon(1e-13));
    }
  for (bool causal : {false, true}) {
    const AttnProblem plain{1, 2, 2, 3, 7, causal};
    const AttnProblem wide{1, 2, 2, 3, 7, causal, spsim::rt::MaskBounds({}, 7)};
    CHECK(attention_forward(wide, in.q, in.k, in.v).o == attention_forward(plain, in.q, in.k, in.v).o);
  }
  // Documents that do not cover the sequence are bad input naming the key.
  const AttnProblem short_docs{1, 2, 2, 3, 7, true, spsim::rt::MaskBounds(std::vector<std::int64_t>{3, 3}, 0)};
  CHECK_THROWS_WITH_AS((void)attention_forward(short_docs, in.q, in.k, in.v),
                       doctest::Contains("sum to 6, not the sequence length 7"), spsim::InputError);
}
