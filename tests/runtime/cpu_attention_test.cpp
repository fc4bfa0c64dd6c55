// CpuDevice attention tests: masked softmax, attention blocks and the online-softmax merge, against naive
// float64 formulas written here, with causal masks on contiguous, zigzag and striped token positions,
// and document and window bounds.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include "tests/runtime/cpu_test_util.hpp"

namespace spsim::rt {
namespace {

using cpu_test::check_close;
using cpu_test::random_tensor;
using cpu_test::random_values;
using cpu_test::Values;
using List = std::vector<std::int64_t>;

constexpr double inf = std::numeric_limits<double>::infinity();

// A named causal (or not) mask over given global positions of the query rows and key columns.
struct MaskCase {
  std::string name;
  bool causal;
  Positions rows, cols;
  MaskBounds bounds = {};  // documents, window
  [[nodiscard]] Mask mask() const { return Mask{causal, &rows, &cols, &bounds}; }
};

// Row positions and key positions for 4 query rows; the comments say what each exercises.
std::vector<MaskCase> mask_cases() {
  return {
      {"unmasked", false, {0, 1, 2, 3}, {0, 1, 2, 3, 4}},
      {"causal, every pair allowed", true, {5, 6, 7, 8}, {0, 1, 2, 3, 4}},
      // Zigzag with P = 2 over 10 tokens: rank 0 holds chunks 0 and 3 (tokens 0,1 and 8,9 → rows 0, 1, 8, 9
      // here), keys are rank 1's chunks 1 and 2 (tokens 2..7 → cols 2, 3, 4, 5, 6 use 5 of them): rows at 0
      // and 1 see nothing, rows at 8 and 9 see everything.
      {"zigzag, fully masked rows", true, {0, 1, 8, 9}, {2, 3, 4, 5, 6}},
      // Striped with P = 2: rows are odd tokens, keys even tokens: row 2i+1 sees keys 0..2i.
      {"striped, partial rows", true, {1, 3, 5, 7}, {0, 2, 4, 6, 8}},
      // Unsorted positions and a row that sees nothing.
      {"arbitrary order", true, {9, 2, 0, 6}, {8, 3, 1, 6, 2}},
      {"fully masked block", true, {0, 1, 2, 3}, {4, 5, 6, 7, 8}},
      // Documents [0, 3), [3, 4), [4, 10): row 3 sees itself only, row 0 nothing of the keys.
      {"documents, causal", true, {0, 3, 5, 9}, {1, 2, 3, 4, 6}, MaskBounds(List{3, 1, 6}, 0)},
      {"documents, both directions", false, {0, 3, 5, 9}, {1, 2, 3, 4, 6}, MaskBounds(List{3, 1, 6}, 0)},
      // A window of 2: row q sees keys q − 1 (and q + 1 in both directions).
      {"window, causal", true, {1, 3, 5, 7}, {0, 2, 4, 6, 8}, MaskBounds({}, 2)},
      {"window, both directions", false, {1, 3, 5, 7}, {0, 2, 4, 6, 8}, MaskBounds({}, 2)},
      {"documents and a window", true, {2, 4, 6, 9}, {0, 1, 3, 5, 8}, MaskBounds(List{4, 6}, 3)},
      {"documents, fully masked block", true, {5, 6, 7, 8}, {0, 1, 2, 3, 4}, MaskBounds(List{5, 5}, 0)},
  };
}

// softmax over the last dim of scale·x with masked entries excluded (probability 0); a row with no
// allowed entry is all zeros. x: [batch, rows, cols].
Values naive_softmax(const Values& x, std::size_t rows, std::size_t cols, double scale, const Mask& mask) {
  Values y(x.size(), 0.0);
  for (std::size_t base = 0; base < x.size(); base += rows * cols)
    for (std::size_t r = 0; r < rows; ++r) {
      double m = -inf, l = 0;
      const auto ok = [&](std::size_t c) {
        return mask.allowed(static_cast<std::int64_t>(r), static_cast<std::int64_t>(c));
      };
      for (std::size_t c = 0; c < cols; ++c)
        if (ok(c)) m = std::max(m, scale * x[base + r * cols + c]);
      if (m == -inf) continue;
      for (std::size_t c = 0; c < cols; ++c)
        if (ok(c)) l += std::exp(scale * x[base + r * cols + c] - m);
      for (std::size_t c = 0; c < cols; ++c)
        if (ok(c)) y[base + r * cols + c] = std::exp(scale * x[base + r * cols + c] - m) / l;
    }
  return y;
}

// Naive attention, its pieces spelled out: S = scale q kᵀ, P = masked softmax(S), o = P v,
// lse_r = log Σ_{allowed c} exp(S_rc) (−inf if none). Query batch i uses kv batch i / (bq / bk).
struct Attention {
  std::size_t bq, bk, sq, sk, d, dv;
};
struct Forward {
  Values o, lse, p;  // p: [bq, sq, sk]
};

Forward naive_attention(const Attention& a, const Values& q, const Values& k, const Values& v, double scale,
                        const Mask& mask) {
  Forward f{Values(a.bq * a.sq * a.dv, 0.0), Values(a.bq * a.sq, -inf), Values(a.bq * a.sq * a.sk, 0.0)};
  for (std::size_t i = 0; i < a.bq; ++i) {
    const std::size_t j = i / (a.bq / a.bk);
    Values s(a.sq * a.sk);
    for (std::size_t r = 0; r < a.sq; ++r)
      for (std::size_t c = 0; c < a.sk; ++c) {
        double dot = 0;
        for (std::size_t t = 0; t < a.d; ++t)
          dot += q[(i * a.sq + r) * a.d + t] * k[(j * a.sk + c) * a.d + t];
        s[r * a.sk + c] = dot;
      }
    const Values p = naive_softmax(s, a.sq, a.sk, scale, mask);
    for (std::size_t r = 0; r < a.sq; ++r) {
      double l = 0;
      for (std::size_t c = 0; c < a.sk; ++c) {
        if (!mask.allowed(static_cast<std::int64_t>(r), static_cast<std::int64_t>(c))) continue;
        l += std::exp(scale * s[r * a.sk + c]);
        f.p[(i * a.sq + r) * a.sk + c] = p[r * a.sk + c];
        for (std::size_t t = 0; t < a.dv; ++t)
          f.o[(i * a.sq + r) * a.dv + t] += p[r * a.sk + c] * v[(j * a.sk + c) * a.dv + t];
      }
      f.lse[i * a.sq + r] = std::log(l);  // log(0) = −inf for a row that sees nothing
    }
  }
  return f;
}

// Gradients of L = Σ dO ⊙ o by the chain rule through the naive pieces: dv = pᵀ dO, dp = dO vᵀ,
// dS = softmax Jacobian applied to dp (dS_rc = p_rc (dp_rc − Σ_c' p_rc' dp_rc')), dq = scale dS k,
// dk = scale dSᵀ q; kv gradients summed over the query batches that share them.
struct Grads {
  Values dq, dk, dv;
};
Grads naive_attention_backward(const Attention& a, const Values& q, const Values& k, const Values& v,
                               const Values& d_o, const Forward& f, double scale) {
  Grads g{Values(q.size(), 0.0), Values(k.size(), 0.0), Values(v.size(), 0.0)};
  for (std::size_t i = 0; i < a.bq; ++i) {
    const std::size_t j = i / (a.bq / a.bk);
    for (std::size_t r = 0; r < a.sq; ++r) {
      Values dp(a.sk, 0.0);
      double pdp = 0;
      for (std::size_t c = 0; c < a.sk; ++c) {
        for (std::size_t t = 0; t < a.dv; ++t)
          dp[c] += d_o[(i * a.sq + r) * a.dv + t] * v[(j * a.sk + c) * a.dv + t];
        pdp += f.p[(i * a.sq + r) * a.sk + c] * dp[c];
      }
      for (std::size_t c = 0; c < a.sk; ++c) {
        const double p = f.p[(i * a.sq + r) * a.sk + c], ds = p * (dp[c] - pdp);
        for (std::size_t t = 0; t < a.dv; ++t)
          g.dv[(j * a.sk + c) * a.dv + t] += p * d_o[(i * a.sq + r) * a.dv + t];
        for (std::size_t t = 0; t < a.d; ++t) {
          g.dq[(i * a.sq + r) * a.d + t] += scale * ds * k[(j * a.sk + c) * a.d + t];
          g.dk[(j * a.sk + c) * a.d + t] += scale * ds * q[(i * a.sq + r) * a.d + t];
        }
      }
    }
  }
  return g;
}

Values plus(Values a, const Values& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

Shape shape3(std::size_t b, std::size_t r, std::size_t c) {
  return {static_cast<std::int64_t>(b), static_cast<std::int64_t>(r), static_cast<std::int64_t>(c)};
}

}  // namespace

TEST_CASE_TEMPLATE("cpu softmax: masked rows vs naive, fully masked rows and blocks are zero", T, float,
                   double) {
  CpuDevice dev(dtype_of<T>());
  for (const MaskCase& mc : mask_cases()) {
    CAPTURE(mc.name);
    const Mask mask = mc.mask();
    Tensor x = random_tensor(dev, shape3(2, mc.rows.size(), mc.cols.size()), 40);
    Tensor y = dev.empty_like(x);
    dev.softmax(x, y, 0.7, mask);
    check_close(dev.to_host(y), naive_softmax(dev.to_host(x), mc.rows.size(), mc.cols.size(), 0.7, mask),
                cpu_test::tolerance<T>());
    // Masked entries are exactly 0, not merely tiny.
    const Values hy = dev.to_host(y);
    std::size_t nonzero_masked = 0;
    for (std::size_t i = 0; i < hy.size(); ++i) {
      const auto r = static_cast<std::int64_t>(i / mc.cols.size() % mc.rows.size());
      const auto c = static_cast<std::int64_t>(i % mc.cols.size());
      nonzero_masked += !mask.allowed(r, c) && hy[i] != 0.0;
    }
    CHECK(nonzero_masked == 0);
  }
  Tensor x = dev.zeros({4, 3});
  const Positions three{0, 1, 2};
  CHECK_THROWS_AS(dev.softmax(x, x, 1.0, Mask{true, &three, &three}),
                  RuntimeError);  // 3 row positions for 4 rows
}

TEST_CASE_TEMPLATE("cpu softmax_backward: matches finite differences of the masked softmax", T, float,
                   double) {
  CpuDevice dev(dtype_of<T>());
  for (const MaskCase& mc : mask_cases()) {
    CAPTURE(mc.name);
    const Mask mask = mc.mask();
    const Shape shape = shape3(2, mc.rows.size(), mc.cols.size());
    Tensor x = random_tensor(dev, shape, 41), y = dev.empty(shape), dx = dev.empty(shape);
    const Values r = random_values(cpu_test::count(shape), 42);
    Tensor dy = dev.from_host(r, shape);
    dev.softmax(x, y, 1.3, mask);
    dev.softmax_backward(y, dy, dx, 1.3);
    const Values want = cpu_test::finite_difference(
        [&](const Values& p) {
          return cpu_test::dot(r, naive_softmax(p, mc.rows.size(), mc.cols.size(), 1.3, mask));
        },
        dev.to_host(x));
    check_close(dev.to_host(dx), want, cpu_test::fd_tolerance<T>());
  }
}

TEST_CASE_TEMPLATE("cpu attention_block_forward: o and lse vs naive softmax(q kᵀ scale) v", T, float,
                   double) {
  CpuDevice dev(dtype_of<T>());
  for (const MaskCase& mc : mask_cases())
    for (std::size_t bk : {4, 2, 1}) {  // MHA, GQA with 2 query heads per kv head, MQA
      CAPTURE(mc.name);
      CAPTURE(bk);
      const Attention a{
          4, bk, static_cast<std::size_t>(mc.rows.size()), static_cast<std::size_t>(mc.cols.size()),
          3, 2};  // v's head dim differs from q's
      Tensor q = random_tensor(dev, shape3(a.bq, a.sq, a.d), 50),
             k = random_tensor(dev, shape3(a.bk, a.sk, a.d), 51);
      Tensor v = random_tensor(dev, shape3(a.bk, a.sk, a.dv), 52);
      Tensor o = dev.empty(shape3(a.bq, a.sq, a.dv)), lse = dev.empty({4, static_cast<std::int64_t>(a.sq)});
      const Mask mask = mc.mask();
      dev.attention_block_forward(q, k, v, o, lse, 0.6, mask);
      const Forward want = naive_attention(a, dev.to_host(q), dev.to_host(k), dev.to_host(v), 0.6, mask);
      check_close(dev.to_host(o), want.o, cpu_test::tolerance<T>());
      check_close(dev.to_host(lse), want.lse, cpu_test::tolerance<T>());
    }
  Tensor q = dev.zeros({2, 4, 3}), k = dev.zeros({3, 5, 3}), o = dev.zeros({2, 4, 3}),
         lse = dev.zeros({2, 4});
  CHECK_THROWS_AS(dev.attention_block_forward(q, k, k, o, lse, 1.0, Mask{}), RuntimeError);  // 3 ∤ 2 batches
  Tensor k2 = dev.zeros({2, 5, 4});
  CHECK_THROWS_AS(dev.attention_block_forward(q, k2, k2, o, lse, 1.0, Mask{}),
                  RuntimeError);  // head dims 3 vs 4
}

TEST_CASE_TEMPLATE("cpu attention_block_backward: accumulates the chain-rule gradients of naive attention", T,
                   float, double) {
  CpuDevice dev(dtype_of<T>());
  for (const MaskCase& mc : mask_cases())
    for (std::size_t bk : {4, 2}) {
      CAPTURE(mc.name);
      CAPTURE(bk);
      const Attention a{
          4, bk, static_cast<std::size_t>(mc.rows.size()), static_cast<std::size_t>(mc.cols.size()), 3, 2};
      Tensor q = random_tensor(dev, shape3(a.bq, a.sq, a.d), 60),
             k = random_tensor(dev, shape3(a.bk, a.sk, a.d), 61);
      Tensor v = random_tensor(dev, shape3(a.bk, a.sk, a.dv), 62),
             d_o = random_tensor(dev, shape3(a.bq, a.sq, a.dv), 63);
      const Mask mask = mc.mask();
      const Values hq = dev.to_host(q), hk = dev.to_host(k), hv = dev.to_host(v);
      const Forward f = naive_attention(a, hq, hk, hv, 0.6, mask);
      const Grads want = naive_attention_backward(a, hq, hk, hv, dev.to_host(d_o), f, 0.6);
      Tensor o = dev.from_host(f.o, shape3(a.bq, a.sq, a.dv)),
             lse = dev.from_host(f.lse, {4, static_cast<std::int64_t>(a.sq)});
      // Start the gradients from known values: the op adds to them.
      Tensor dq = random_tensor(dev, q.shape(), 64), dk = random_tensor(dev, k.shape(), 65),
             dv = random_tensor(dev, v.shape(), 66);
      const Values dq0 = dev.to_host(dq), dk0 = dev.to_host(dk), dv0 = dev.to_host(dv);
      dev.attention_block_backward(q, k, v, o, d_o, lse, dq, dk, dv, 0.6, mask);
      check_close(dev.to_host(dq), plus(dq0, want.dq), cpu_test::tolerance<T>());
      check_close(dev.to_host(dk), plus(dk0, want.dk), cpu_test::tolerance<T>());
      check_close(dev.to_host(dv), plus(dv0, want.dv), cpu_test::tolerance<T>());
    }
}

// With scale 400 the scores span about ±1200, so masked scores can sit far above a row's lse: exp of
// them overflows in both float32 and float64, and only the masking keeps o, lse and the gradients finite.
// Expected values still come from the naive formulas; the wider tolerance covers the rounding of scores
// of magnitude ~1e3 (it moves each probability by ~1e3 ulps relative).
TEST_CASE_TEMPLATE("cpu attention: huge scores under a partial mask stay finite and exact", T, float,
                   double) {
  CpuDevice dev(dtype_of<T>());
  const MaskCase mc{"striped", true, {1, 3, 5, 7}, {0, 2, 4, 6, 8}};
  const Mask mask = mc.mask();
  const Attention a{2, 2, 4, 5, 3, 3};
  const double scale = 400;
  Tensor q = random_tensor(dev, shape3(2, 4, 3), 80), k = random_tensor(dev, shape3(2, 5, 3), 81);
  Tensor v = random_tensor(dev, shape3(2, 5, 3), 82), d_o = random_tensor(dev, shape3(2, 4, 3), 83);
  Tensor o = dev.empty(shape3(2, 4, 3)), lse = dev.empty({2, 4});
  dev.attention_block_forward(q, k, v, o, lse, scale, mask);
  Tensor dq = dev.zeros(q.shape()), dk = dev.zeros(k.shape()), dv = dev.zeros(v.shape());
  dev.attention_block_backward(q, k, v, o, d_o, lse, dq, dk, dv, scale, mask);
  const Values hq = dev.to_host(q), hk = dev.to_host(k), hv = dev.to_host(v);
  const Forward want = naive_attention(a, hq, hk, hv, scale, mask);
  const Grads g = naive_attention_backward(a, hq, hk, hv, dev.to_host(d_o), want, scale);
  const double tol = 100 * cpu_test::tolerance<T>();
  check_close(dev.to_host(o), want.o, tol);
  check_close(dev.to_host(lse), want.lse, tol);
  check_close(dev.to_host(dq), g.dq, tol);
  check_close(dev.to_host(dk), g.dk, tol);
  check_close(dev.to_host(dv), g.dv, tol);
  Tensor x = random_tensor(dev, shape3(2, 4, 5), 84), y = dev.empty(shape3(2, 4, 5));
  dev.softmax(x, y, 2000.0, mask);
  check_close(dev.to_host(y), naive_softmax(dev.to_host(x), 4, 5, 2000.0, mask), tol);
}

// Splitting the keys into blocks, attending to each block and merging (forward), or running each
// block's backward with the final o and lse (backward), must give full attention: this is the ring /
// flash-attention decomposition. Scenario A has a block that no row may see and rows that see only
// the first block; in scenario B two query rows see no key at all.
TEST_CASE_TEMPLATE("cpu merge_attention: merged key blocks equal full attention, forward and backward", T,
                   float, double) {
  CpuDevice dev(dtype_of<T>());
  struct Scenario {
    std::string name;
    Positions rows;
    List cols;
    std::vector<std::int64_t> splits;  // block boundaries in the key dimension
  };
  const std::vector<Scenario> scenarios{
      {"A: 4 blocks, last fully masked", {0, 1, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 3, 5, 8, 10}},
      {"B: rows with no key", {0, 1, 6, 7}, {2, 3, 4, 5, 6, 7, 8, 9}, {0, 2, 5, 8}},
      {"C: unmasked, 2 blocks", {}, {}, {0, 3, 7}},
  };
  for (const Scenario& sc : scenarios) {
    CAPTURE(sc.name);
    const bool causal = !sc.rows.empty();
    const Attention a{4, 2, 4, static_cast<std::size_t>(sc.splits.back()), 3, 3};
    const auto sk = static_cast<std::int64_t>(a.sk);
    Tensor q = random_tensor(dev, shape3(a.bq, a.sq, a.d), 70),
           k = random_tensor(dev, shape3(a.bk, a.sk, a.d), 71);
    Tensor v = random_tensor(dev, shape3(a.bk, a.sk, a.dv), 72),
           d_o = random_tensor(dev, shape3(a.bq, a.sq, a.dv), 73);
    const Positions all_cols(sc.cols);
    const Mask full{causal, &sc.rows, &all_cols};
    const Values hq = dev.to_host(q), hk = dev.to_host(k), hv = dev.to_host(v);
    const Forward want = naive_attention(a, hq, hk, hv, 0.5, full);
    const Grads want_grads = naive_attention_backward(a, hq, hk, hv, dev.to_host(d_o), want, 0.5);

    Tensor o = dev.zeros(shape3(a.bq, a.sq, a.dv)), lse = dev.empty({4, 4});
    dev.fill(lse, -inf);  // the empty accumulator: no key seen yet
    Tensor o_blk = dev.empty_like(o), lse_blk = dev.empty_like(lse);
    for (std::size_t b = 0; b + 1 < sc.splits.size(); ++b) {
      const std::int64_t start = sc.splits[b], len = sc.splits[b + 1] - start;
      const Positions cols =
          causal ? Positions(List(sc.cols.begin() + start, sc.cols.begin() + start + len)) : Positions{};
      dev.attention_block_forward(q, dev.slice(k, 1, start, len), dev.slice(v, 1, start, len), o_blk, lse_blk,
                                  0.5, Mask{causal, &sc.rows, &cols});
      dev.merge_attention(o, lse, o_blk, lse_blk);
    }
    check_close(dev.to_host(o), want.o, cpu_test::tolerance<T>());
    check_close(dev.to_host(lse), want.lse, cpu_test::tolerance<T>());

    Tensor dq = dev.zeros(q.shape()), dk = dev.zeros(k.shape()), dv = dev.zeros(v.shape());
    for (std::size_t b = 0; b + 1 < sc.splits.size(); ++b) {
      const std::int64_t start = sc.splits[b], len = sc.splits[b + 1] - start;
      const Positions cols =
          causal ? Positions(List(sc.cols.begin() + start, sc.cols.begin() + start + len)) : Positions{};
      Tensor dk_blk = dev.zeros({2, len, 3}), dv_blk = dev.zeros({2, len, 3});
      dev.attention_block_backward(q, dev.slice(k, 1, start, len), dev.slice(v, 1, start, len), o, d_o, lse,
                                   dq, dk_blk, dv_blk, 0.5, Mask{causal, &sc.rows, &cols});
      dev.slice_assign(dk, 1, start, dk_blk);
      dev.slice_assign(dv, 1, start, dv_blk);
    }
    CHECK(sk == k.dim(1));
    check_close(dev.to_host(dq), want_grads.dq, cpu_test::tolerance<T>());
    check_close(dev.to_host(dk), want_grads.dk, cpu_test::tolerance<T>());
    check_close(dev.to_host(dv), want_grads.dv, cpu_test::tolerance<T>());
  }
}

TEST_CASE_TEMPLATE("cpu merge_attention: closed form on hand-picked log-sum-exps", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  // Rows: (lse, lse_blk) = (log 1, log 3): weights 1/4, 3/4, lse' = log 4; (−inf, 0): takes the block;
  // (0, −inf): keeps the accumulator; (−inf, −inf): o = 0, lse = −inf.
  Tensor o = dev.from_host(Values{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Tensor lse = dev.from_host(Values{0.0, -inf, 0.0, -inf}, {4});
  Tensor ob = dev.from_host(Values{5, 6, 7, 8, 9, 10, 11, 12}, {4, 2});
  Tensor lb = dev.from_host(Values{std::log(3.0), 0.0, -inf, -inf}, {4});
  dev.merge_attention(o, lse, ob, lb);
  check_close(dev.to_host(o), {0.25 * 1 + 0.75 * 5, 0.25 * 2 + 0.75 * 6, 7, 8, 5, 6, 0, 0},
              cpu_test::tolerance<T>());
  check_close(dev.to_host(lse), {std::log(4.0), 0.0, 0.0, -inf}, cpu_test::tolerance<T>());
  Tensor wrong = dev.zeros({4, 3});
  CHECK_THROWS_AS(dev.merge_attention(o, lse, wrong, lb), RuntimeError);
}

// Ranks of the threads backend each own a CpuDevice and run at once: devices share no mutable state, so
// results computed concurrently equal those computed one after the other (and TSan sees no race).
TEST_CASE("cpu device: independent instances run concurrently with identical results") {
  const MaskCase mc{"striped", true, {1, 3, 5, 7}, {0, 2, 4, 6, 8}};
  auto run = [&mc](std::uint32_t seed) {
    CpuDevice dev(DType::f64);
    Tensor q = random_tensor(dev, {2, 4, 8}, seed), k = random_tensor(dev, {1, 5, 8}, seed + 1);
    Tensor v = random_tensor(dev, {1, 5, 8}, seed + 2), o = dev.empty({2, 4, 8}), lse = dev.empty({2, 4});
    dev.attention_block_forward(q, k, v, o, lse, 0.35, mc.mask());
    Tensor dq = dev.zeros(q.shape()), dk = dev.zeros(k.shape()), dv = dev.zeros(v.shape());
    dev.attention_block_backward(q, k, v, o, o, lse, dq, dk, dv, 0.35, mc.mask());
    Values all = dev.to_host(o);
    for (const Tensor* t : {&lse, &dq, &dk, &dv}) {
      const Values h = dev.to_host(*t);
      all.insert(all.end(), h.begin(), h.end());
    }
    return all;
  };
  std::vector<Values> sequential, concurrent(4);
  for (std::uint32_t r = 0; r < 4; ++r) sequential.push_back(run(10 * r));
  std::vector<std::thread> threads;
  for (std::uint32_t r = 0; r < 4; ++r) threads.emplace_back([&, r] { concurrent[r] = run(10 * r); });
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < 4; ++r) CHECK(concurrent[r] == sequential[r]);
}

}  // namespace spsim::rt
