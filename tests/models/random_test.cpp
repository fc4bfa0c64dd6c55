// Tests of the deterministic generator and the LayerParams container.
#include "models/random.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "models/layer_params.hpp"
#include "runtime/core/error.hpp"

using spsim::models::LayerParams;
using spsim::models::ModelSpec;
using spsim::models::SplitMix64;

namespace {

ModelSpec small_gqa_spec() {
  ModelSpec m;
  m.hidden = 8;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 3;
  m.ffn_hidden = 12;
  return m;
}

struct Moments {
  double mean = 0.0;
  double variance = 0.0;
};

Moments moments(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.mean += x / static_cast<double>(xs.size());
  for (double x : xs) m.variance += (x - m.mean) * (x - m.mean) / static_cast<double>(xs.size());
  return m;
}

}  // namespace

TEST_CASE("SplitMix64 reproduces the published splitmix64 sequence") {
  // Outputs of the reference splitmix64.c (Vigna, public domain) for seeds 0 and 1234567.
  SplitMix64 zero(0);
  CHECK(zero.next_u64() == 0xE220A8397B1DCDAFULL);
  SplitMix64 g(1234567);
  CHECK(g.next_u64() == 6457827717110365317ULL);
  CHECK(g.next_u64() == 3203168211198807973ULL);
  CHECK(g.next_u64() == 9817491932198370423ULL);
  CHECK(g.next_u64() == 4593380528125082431ULL);
  CHECK(g.next_u64() == 16408922859458223821ULL);
}

TEST_CASE("uniforms lie in [0, 1) and normals have mean 0 and variance stddev²") {
  SplitMix64 g(3);
  for (int i = 0; i < 1000; ++i) {
    const double u = g.next_uniform();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
  // n = 20000 samples of N(0, 2²): the sample mean has standard error 2/√n ≈ 0.014 and the sample
  // variance 4·√(2/n) ≈ 0.04; the bounds are about 5 standard errors.
  const auto xs = spsim::models::random_vector(20000, 5, 2.0);
  const Moments m = moments(xs);
  CHECK(std::abs(m.mean) < 0.07);
  CHECK(std::abs(m.variance - 4.0) < 0.2);
  CHECK(spsim::models::random_vector(20000, 5, 2.0) == xs);  // same seed, same values
  CHECK(spsim::models::random_vector(20000, 6, 2.0) != xs);
  CHECK_THROWS_AS((void)spsim::models::random_vector(-1, 1, 1.0), std::invalid_argument);
}

TEST_CASE("make_layer_params: fixed names, order and shapes from the spec, all zero") {
  const ModelSpec m = small_gqa_spec();  // H*D = 12, Hkv*D = 6
  const LayerParams p = spsim::models::make_layer_params(m);
  const spsim::rt::Shape expected[] = {{8},     {8}, {12, 8}, {12}, {6, 8},  {6},  {6, 8},  {6},
                                       {8, 12}, {8}, {8},     {8},  {12, 8}, {12}, {8, 12}, {8}};
  REQUIRE(p.tensors.size() == spsim::models::kLayerParamNames.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < p.tensors.size(); ++i) {
    CAPTURE(i);
    CHECK(p.tensors[i].name == spsim::models::kLayerParamNames[i]);
    CHECK(p.tensors[i].shape == expected[i]);
    CHECK(static_cast<std::int64_t>(p.tensors[i].data.size()) == spsim::rt::numel(expected[i]));
    for (double x : p.tensors[i].data) CHECK(x == 0.0);
    total += spsim::rt::numel(expected[i]);
  }
  CHECK(p.numel() == total);
  CHECK(&p.at("wk") == &p.tensors[4]);
  CHECK_THROWS_AS((void)p.at("wqkv"), std::out_of_range);
  // SwiGLU adds the up projection w3 [ffn, hidden], b3 [ffn] after b1.
  ModelSpec s = m;
  s.mlp = spsim::models::Mlp::swiglu;
  const LayerParams q = spsim::models::make_layer_params(s);
  REQUIRE(q.tensors.size() == spsim::models::kSwigluLayerParamNames.size());
  for (std::size_t i = 0; i < q.tensors.size(); ++i) CHECK(q.tensors[i].name == spsim::models::kSwigluLayerParamNames[i]);
  CHECK(q.at("w3").shape == spsim::rt::Shape{12, 8});
  CHECK(q.at("b3").shape == spsim::rt::Shape{12});
  CHECK(q.numel() == p.numel() + 12 * 8 + 12);
}

TEST_CASE("check_layer_spec names the bad field") {
  ModelSpec m = small_gqa_spec();
  CHECK_NOTHROW(spsim::models::check_layer_spec(m));
  m.kv_heads = 3;
  try {
    spsim::models::check_layer_spec(m);
    FAIL("expected InputError");
  } catch (const spsim::InputError& e) {
    CHECK(e.where() == "model.kv_heads");
  }
  m = small_gqa_spec();
  m.ffn_hidden = 0;
  CHECK_THROWS_AS(spsim::models::check_layer_spec(m), spsim::InputError);
}

TEST_CASE("randomize is deterministic and scales weights by 1/sqrt(fan_in)") {
  ModelSpec m = small_gqa_spec();
  m.hidden = 64;  // wq: 12*64 = 768 values of N(0, 1/64)
  LayerParams a = spsim::models::make_layer_params(m);
  LayerParams b = spsim::models::make_layer_params(m);
  spsim::models::randomize(a, 1);
  spsim::models::randomize(b, 1);
  for (std::size_t i = 0; i < a.tensors.size(); ++i) CHECK(a.tensors[i].data == b.tensors[i].data);
  spsim::models::randomize(b, 2);
  CHECK(a.at("wq").data != b.at("wq").data);
  // Sample variance of n = 768 normals has relative standard error √(2/n) ≈ 5 %: allow 25 %.
  CHECK(moments(a.at("wq").data).variance == doctest::Approx(1.0 / 64.0).epsilon(0.25));
  // w2 has fan_in = ffn = 12: 64*12 = 768 values of N(0, 1/12).
  CHECK(moments(a.at("w2").data).variance == doctest::Approx(1.0 / 12.0).epsilon(0.25));
  // gamma ~ 1 + N(0, 0.01): 64 values, mean within 5 standard errors (5 · 0.1/8) of 1.
  CHECK(std::abs(moments(a.at("ln1.gamma").data).mean - 1.0) < 0.07);
  CHECK(std::abs(moments(a.at("bq").data).mean) < 0.15);  // 12 values of N(0, 0.01): σ/√12 ≈ 0.03
}
