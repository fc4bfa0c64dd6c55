// CpuDevice tests: memory, gemm, elementwise and layout ops, linear/LayerNorm/GeLU, against naive references.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/runtime/cpu_test_util.hpp"

namespace spsim::rt {
namespace {

using cpu_test::check_close;
using cpu_test::count;
using cpu_test::random_tensor;
using cpu_test::random_values;
using cpu_test::Values;

// Naive batched gemm over float64 host copies, with the broadcasting of device.hpp: op batch i reads
// a[i / (n/ba)], b[i / (n/bb)] and adds into c[i / (n/bc)].
Values naive_gemm(const Values& a, const Values& b, Values c, std::int64_t ba, std::int64_t bb,
                  std::int64_t bc, std::int64_t m, std::int64_t n, std::int64_t k, Trans ta, Trans tb,
                  double alpha, double beta) {
  const std::int64_t nb = std::max({ba, bb, bc});
  for (auto& x : c) x = beta == 0.0 ? 0.0 : beta * x;
  for (std::int64_t i = 0; i < nb; ++i) {
    const double* ai = a.data() + i / (nb / ba) * m * k;
    const double* bi = b.data() + i / (nb / bb) * k * n;
    double* ci = c.data() + i / (nb / bc) * m * n;
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t col = 0; col < n; ++col) {
        double s = 0;
        for (std::int64_t t = 0; t < k; ++t)
          s += (ta == Trans::N ? ai[r * k + t] : ai[t * m + r]) *
               (tb == Trans::N ? bi[t * n + col] : bi[col * k + t]);
        ci[r * n + col] += alpha * s;
      }
  }
  return c;
}

Shape batched_shape(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool two_d) {
  return two_d ? Shape{rows, cols} : Shape{batch, rows, cols};
}

}  // namespace

TEST_CASE("cpu device: constructs for float32/float64 only") {
  CHECK(CpuDevice(DType::f32).dtype() == DType::f32);
  CHECK(CpuDevice(DType::f64).dtype() == DType::f64);
  CHECK(CpuDevice(DType::f64).name() == "cpu");
  CHECK_THROWS_AS(CpuDevice(DType::bf16), RuntimeError);
  CHECK_THROWS_AS(CpuDevice(DType::f16), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu device: host round trip, fill, copy, zeros", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  const Values v{1.5, -2.25, 0.0, 1e3, 7.0, -0.5};  // all exactly representable in float32
  Tensor t = dev.from_host(v, {2, 3});
  CHECK(t.dtype() == dtype_of<T>());
  CHECK(dev.to_host(t) == v);
  Tensor u = dev.empty({3, 2});
  dev.copy(t, u);  // same numel, different shape
  CHECK(dev.to_host(u) == v);
  dev.fill(u, 0.25);
  CHECK(dev.to_host(u) == Values(6, 0.25));
  CHECK(dev.to_host(dev.zeros({4})) == Values(4, 0.0));
  CHECK_THROWS_AS((void)dev.from_host(v, {4}), RuntimeError);
  Tensor w = dev.empty({5});
  CHECK_THROWS_AS(dev.copy(t, w), RuntimeError);
  CpuDevice other(sizeof(T) == 8 ? DType::f32 : DType::f64);
  CHECK_THROWS_AS((void)dev.to_host(other.zeros({2})), RuntimeError);  // wrong dtype names the op
}

TEST_CASE_TEMPLATE("cpu gemm: all transposes, alpha/beta, batch broadcasting vs naive loops", T, float,
                   double) {
  CpuDevice dev(dtype_of<T>());
  const std::int64_t m = 3, n = 5, k = 4;
  struct Batches {
    std::int64_t a, b, c;
    bool two_d;
  };
  // 2-D; plain batched; b shared (GQA-like); a shared; output summed over pairs of batches; both.
  const std::array<Batches, 6> cases{{{1, 1, 1, true},
                                      {3, 3, 3, false},
                                      {4, 2, 4, false},
                                      {2, 4, 4, false},
                                      {4, 4, 2, false},
                                      {4, 1, 1, false}}};
  std::uint32_t seed = 1;
  for (const auto& bt : cases)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (double alpha : {1.0, -0.5})
          for (double beta : {0.0, 1.0, 0.75}) {
            CAPTURE(bt.a);
            CAPTURE(bt.b);
            CAPTURE(bt.c);
            CAPTURE(static_cast<int>(ta));
            CAPTURE(static_cast<int>(tb));
            CAPTURE(alpha);
            CAPTURE(beta);
            Tensor a = random_tensor(
                dev, batched_shape(bt.a, ta == Trans::N ? m : k, ta == Trans::N ? k : m, bt.two_d), ++seed);
            Tensor b = random_tensor(
                dev, batched_shape(bt.b, tb == Trans::N ? k : n, tb == Trans::N ? n : k, bt.two_d), ++seed);
            Tensor c = random_tensor(dev, batched_shape(bt.c, m, n, bt.two_d), ++seed);
            const Values want = naive_gemm(dev.to_host(a), dev.to_host(b), dev.to_host(c), bt.a, bt.b, bt.c,
                                           m, n, k, ta, tb, alpha, beta);
            dev.gemm(a, b, c, ta, tb, alpha, beta);
            check_close(dev.to_host(c), want, cpu_test::tolerance<T>());
          }
}

TEST_CASE_TEMPLATE("cpu gemm: beta = 0 ignores NaN in c; bad shapes throw", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  Tensor a = random_tensor(dev, {2, 3}, 1), b = random_tensor(dev, {3, 2}, 2);
  Tensor c = dev.empty({2, 2});
  dev.fill(c, std::numeric_limits<double>::quiet_NaN());
  dev.gemm(a, b, c, Trans::N, Trans::N);
  check_close(dev.to_host(c),
              naive_gemm(dev.to_host(a), dev.to_host(b), Values(4, 0.0), 1, 1, 1, 2, 2, 3, Trans::N, Trans::N,
                         1.0, 0.0),
              cpu_test::tolerance<T>());
  Tensor wrong = dev.empty({3, 3});
  CHECK_THROWS_AS(dev.gemm(a, b, wrong, Trans::N, Trans::N), RuntimeError);  // c is not 2 x 2
  CHECK_THROWS_AS(dev.gemm(a, a, c, Trans::N, Trans::N), RuntimeError);      // inner dims 3 vs 2
  Tensor a3 = random_tensor(dev, {3, 2, 3}, 3), b2 = random_tensor(dev, {2, 3, 2}, 4),
         c3 = dev.empty({3, 2, 2});
  CHECK_THROWS_AS(dev.gemm(a3, b2, c3, Trans::N, Trans::N), RuntimeError);  // 2 batches do not divide 3
  CHECK_THROWS_AS(dev.gemm(a, b, a, Trans::N, Trans::N), RuntimeError);     // output aliases input
}

TEST_CASE_TEMPLATE("cpu add and scale", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  Tensor a = random_tensor(dev, {2, 3, 4}, 5), b = random_tensor(dev, {2, 3, 4}, 6),
         out = dev.empty({2, 3, 4});
  const Values ha = dev.to_host(a), hb = dev.to_host(b);
  dev.add(a, b, out, 2.0, -0.5);
  Values want(ha.size());
  for (std::size_t i = 0; i < ha.size(); ++i) want[i] = 2.0 * ha[i] - 0.5 * hb[i];
  check_close(dev.to_host(out), want, cpu_test::tolerance<T>());
  dev.add(a, b, a);  // in place, default alpha = beta = 1
  for (std::size_t i = 0; i < ha.size(); ++i) want[i] = ha[i] + hb[i];
  check_close(dev.to_host(a), want, cpu_test::tolerance<T>());
  dev.scale(b, -3.0);
  for (std::size_t i = 0; i < hb.size(); ++i) want[i] = -3.0 * hb[i];
  check_close(dev.to_host(b), want, cpu_test::tolerance<T>());
  Tensor small = dev.empty({2, 3});
  CHECK_THROWS_AS(dev.add(a, small, out), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu slice/concat: concat of slices is the original along every dim", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  const Shape shape{2, 5, 3, 4};
  Tensor x = random_tensor(dev, shape, 7);
  const Values hx = dev.to_host(x);
  for (int dim = -4; dim < 4; ++dim) {
    CAPTURE(dim);
    const std::int64_t extent = x.dim(dim);
    // Uneven pieces: 1, then half the rest, then the remainder (possibly empty).
    const std::int64_t first = 1, second = (extent - 1) / 2, third = extent - first - second;
    const std::array<Tensor, 3> parts{dev.slice(x, dim, 0, first), dev.slice(x, dim, first, second),
                                      dev.slice(x, dim, first + second, third)};
    CHECK(parts[1].dim(dim) == second);
    CHECK(dev.to_host(dev.concat(parts, dim)) == hx);
  }
  // The slice's elements by direct index arithmetic: y[a, b, c, d] = x[a, b + 2, c, d].
  Tensor y = dev.slice(x, 1, 2, 3);
  CHECK(y.shape() == Shape{2, 3, 3, 4});
  const Values hy = dev.to_host(y);
  bool same = true;
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t c = 0; c < 12; ++c)
        same = same && hy[static_cast<std::size_t>((a * 3 + b) * 12 + c)] ==
                           hx[static_cast<std::size_t>((a * 5 + b + 2) * 12 + c)];
  CHECK(same);
  CHECK_THROWS_AS((void)dev.slice(x, 1, 4, 2), RuntimeError);
  CHECK_THROWS_AS((void)dev.slice(x, 4, 0, 1), RuntimeError);
  const std::array<Tensor, 2> mismatched{dev.slice(x, 0, 0, 1), dev.slice(x, 1, 0, 1)};
  CHECK_THROWS_AS((void)dev.concat(mismatched, 0), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu slice_assign: rebuilds the original, and accumulates", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  Tensor x = random_tensor(dev, {3, 6, 2}, 8);
  const Values hx = dev.to_host(x);
  Tensor rebuilt = dev.zeros({3, 6, 2});
  for (std::int64_t start : {0, 2, 5}) {
    const std::int64_t len = start == 0 ? 2 : start == 2 ? 3 : 1;
    dev.slice_assign(rebuilt, 1, start, dev.slice(x, 1, start, len));
  }
  CHECK(dev.to_host(rebuilt) == hx);
  // Accumulate the whole of x onto itself through two overlapping windows: rows 1..3 get x twice more
  // (window [1,4) from slice [1,4), and window [0,4) adding slice [0,4)), so the closed form is per row.
  dev.slice_assign(rebuilt, -2, 1, dev.slice(x, 1, 1, 3), true);
  dev.slice_assign(rebuilt, 1, 0, dev.slice(x, 1, 0, 4), true);
  Values want = hx;
  for (std::int64_t a = 0; a < 3; ++a)
    for (std::int64_t r = 0; r < 6; ++r)
      for (std::int64_t c = 0; c < 2; ++c) {
        const auto i = static_cast<std::size_t>((a * 6 + r) * 2 + c);
        if (r >= 1 && r < 4) want[i] += hx[i];
        if (r < 4) want[i] += hx[i];
      }
  check_close(dev.to_host(rebuilt), want, cpu_test::tolerance<T>());
  Tensor wrong = dev.zeros({3, 2, 3});
  CHECK_THROWS_AS(dev.slice_assign(rebuilt, 1, 0, wrong), RuntimeError);
  CHECK_THROWS_AS(dev.slice_assign(rebuilt, 1, 5, dev.slice(x, 1, 0, 2)), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu permute: matches naive index mapping for every 3-D and 4-D perm", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{2, 3, 4, 5}}) {
    Tensor x = random_tensor(dev, shape, 9);
    const Values hx = dev.to_host(x);
    const int n = static_cast<int>(shape.size());
    std::vector<int> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    do {
      CAPTURE(perm[0] * 1000 + perm[1] * 100 + perm[2] * 10 + (n == 4 ? perm[3] : 0));
      Tensor y = dev.permute(x, perm);
      // Naive: output multi-index i has x index j with j[perm[d]] = i[d].
      Values want(hx.size());
      std::vector<std::int64_t> i(static_cast<std::size_t>(n), 0);
      for (std::size_t flat = 0; flat < want.size(); ++flat) {
        std::int64_t rem = static_cast<std::int64_t>(flat);
        for (int d = n - 1; d >= 0; --d) {
          const std::int64_t extent = shape[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
          i[static_cast<std::size_t>(d)] = rem % extent;
          rem /= extent;
        }
        std::vector<std::int64_t> j(static_cast<std::size_t>(n));
        for (int d = 0; d < n; ++d)
          j[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])] = i[static_cast<std::size_t>(d)];
        std::int64_t src = 0;
        for (int d = 0; d < n; ++d)
          src = src * shape[static_cast<std::size_t>(d)] + j[static_cast<std::size_t>(d)];
        want[flat] = hx[static_cast<std::size_t>(src)];
      }
      for (int d = 0; d < n; ++d)
        CHECK(y.dim(d) == shape[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])]);
      CHECK(dev.to_host(y) == want);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  Tensor x = dev.zeros({2, 3});
  const std::array<int, 2> bad{0, 0};
  CHECK_THROWS_AS((void)dev.permute(x, bad), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu linear and linear_backward vs naive loops", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  const std::int64_t rows = 4, in = 3, out = 5;
  Tensor x = random_tensor(dev, {2, 2, in}, 10), w = random_tensor(dev, {out, in}, 11),
         b = random_tensor(dev, {out}, 12);
  const Values hx = dev.to_host(x), hw = dev.to_host(w), hb = dev.to_host(b);
  Tensor y = dev.empty({2, 2, out});
  dev.linear(x, w, b, y);
  Values want(static_cast<std::size_t>(rows * out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = hb[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i)
        s += hx[static_cast<std::size_t>(r * in + i)] * hw[static_cast<std::size_t>(o * in + i)];
      want[static_cast<std::size_t>(r * out + o)] = s;
    }
  check_close(dev.to_host(y), want, cpu_test::tolerance<T>());

  // Backward: dx = dy w, dw += dyᵀ x, db += Σ_rows dy; start dw, db, dx from known values to see the +=.
  Tensor dy = random_tensor(dev, {2, 2, out}, 13);
  Tensor dx = random_tensor(dev, {2, 2, in}, 14), dw = random_tensor(dev, {out, in}, 15),
         db = random_tensor(dev, {out}, 16);
  const Values hdy = dev.to_host(dy), dx0 = dev.to_host(dx);
  Values want_dx = dx0, want_dw = dev.to_host(dw), want_db = dev.to_host(db);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      const double g = hdy[static_cast<std::size_t>(r * out + o)];
      want_db[static_cast<std::size_t>(o)] += g;
      for (std::int64_t i = 0; i < in; ++i) {
        want_dx[static_cast<std::size_t>(r * in + i)] += g * hw[static_cast<std::size_t>(o * in + i)];
        want_dw[static_cast<std::size_t>(o * in + i)] += g * hx[static_cast<std::size_t>(r * in + i)];
      }
    }
  dev.linear_backward(x, w, dy, dx, dw, db, /*accumulate_dx=*/true);
  check_close(dev.to_host(dx), want_dx, cpu_test::tolerance<T>());
  check_close(dev.to_host(dw), want_dw, cpu_test::tolerance<T>());
  check_close(dev.to_host(db), want_db, cpu_test::tolerance<T>());
  // Without accumulate_dx, dx is overwritten: the result is want_dx − dx0.
  Values fresh(want_dx.size());
  for (std::size_t i = 0; i < fresh.size(); ++i) fresh[i] = want_dx[i] - dx0[i];
  Tensor none;
  dev.linear_backward(x, w, dy, dx, none, none);
  check_close(dev.to_host(dx), fresh, cpu_test::tolerance<T>());
  Tensor bad_w = dev.zeros({out, in + 1});
  CHECK_THROWS_AS(dev.linear(x, bad_w, b, y), RuntimeError);
}

namespace {
// LayerNorm over the last dim in float64: y = (x − mean)/sqrt(var + eps) · γ + β, var biased.
Values naive_layer_norm(const Values& x, const Values& g, const Values& b, std::size_t width, double eps,
                        Values* mean = nullptr, Values* rstd = nullptr) {
  Values y(x.size());
  for (std::size_t r = 0; r < x.size() / width; ++r) {
    double mu = 0, var = 0;
    for (std::size_t i = 0; i < width; ++i) mu += x[r * width + i] / static_cast<double>(width);
    for (std::size_t i = 0; i < width; ++i)
      var += std::pow(x[r * width + i] - mu, 2) / static_cast<double>(width);
    const double rs = 1 / std::sqrt(var + eps);
    for (std::size_t i = 0; i < width; ++i) y[r * width + i] = (x[r * width + i] - mu) * rs * g[i] + b[i];
    if (mean) mean->push_back(mu);
    if (rstd) rstd->push_back(rs);
  }
  return y;
}
}  // namespace

TEST_CASE_TEMPLATE("cpu layer_norm: forward vs naive, backward vs finite differences", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  const std::size_t rows = 3, width = 6;
  const double eps = 1e-5;
  Tensor x = random_tensor(dev, {3, 6}, 20), g = dev.from_host(random_values(width, 21, 0.5, 1.5), {6});
  Tensor b = random_tensor(dev, {6}, 22);
  const Values hx = dev.to_host(x), hg = dev.to_host(g), hb = dev.to_host(b);
  Tensor y = dev.empty({3, 6}), mean = dev.empty({3}), rstd = dev.empty({3});
  dev.layer_norm(x, g, b, eps, y, mean, rstd);
  Values want_mean, want_rstd;
  check_close(dev.to_host(y), naive_layer_norm(hx, hg, hb, width, eps, &want_mean, &want_rstd),
              cpu_test::tolerance<T>());
  check_close(dev.to_host(mean), want_mean, cpu_test::tolerance<T>());
  check_close(dev.to_host(rstd), want_rstd, 10 * cpu_test::tolerance<T>());  // 1/sqrt amplifies rounding

  // Loss L = Σ R ⊙ y; its gradients by central differences of the naive float64 forward.
  const Values r = random_values(rows * width, 23);
  const auto fd = [&](int which) {
    return cpu_test::finite_difference(
        [&](const Values& p) {
          return cpu_test::dot(
              r, naive_layer_norm(which == 0 ? p : hx, which == 1 ? p : hg, which == 2 ? p : hb, width, eps));
        },
        which == 0   ? hx
        : which == 1 ? hg
                     : hb);
  };
  Tensor dy = dev.from_host(r, {3, 6}), dx = dev.from_host(Values(rows * width, 1.0), {3, 6});
  Tensor dg = dev.from_host(Values(width, 0.5), {6}), db = dev.zeros({6});
  dev.layer_norm_backward(x, g, mean, rstd, dy, dx, dg, db, /*accumulate_dx=*/true);
  auto shifted = [](Values v, double by) {
    for (auto& e : v) e += by;
    return v;
  };
  check_close(dev.to_host(dx), shifted(fd(0), 1.0), cpu_test::fd_tolerance<T>());
  check_close(dev.to_host(dg), shifted(fd(1), 0.5), cpu_test::fd_tolerance<T>());
  check_close(dev.to_host(db), fd(2), cpu_test::fd_tolerance<T>());
  Tensor none;
  dev.layer_norm_backward(x, g, mean, rstd, dy, dx, none, none);  // overwrite dx this time
  check_close(dev.to_host(dx), fd(0), cpu_test::fd_tolerance<T>());
}

TEST_CASE_TEMPLATE("cpu gelu: exact erf form, backward vs finite differences", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  const Values hx = random_values(16, 30, -3.0, 3.0);
  Tensor x = dev.from_host(hx, {4, 4}), y = dev.empty({4, 4});
  const Values xs = dev.to_host(x);  // as rounded to T
  auto naive = [](const Values& v) {
    Values out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = 0.5 * v[i] * (1 + std::erf(v[i] / std::sqrt(2.0)));
    return out;
  };
  dev.gelu(x, y);
  check_close(dev.to_host(y), naive(xs), cpu_test::tolerance<T>());
  const Values r = random_values(16, 31);
  Tensor dy = dev.from_host(r, {4, 4}), dx = dev.empty({4, 4});
  dev.gelu_backward(x, dy, dx);
  const Values want =
      cpu_test::finite_difference([&](const Values& p) { return cpu_test::dot(r, naive(p)); }, xs);
  check_close(dev.to_host(dx), want, cpu_test::fd_tolerance<T>());
}

TEST_CASE_TEMPLATE("cpu dropout: keeps about 1 − p, scales by 1/(1 − p), backward is its adjoint via the mask", T,
                   float, double) {
  CpuDevice dev(dtype_of<T>());
  constexpr std::int64_t n = 20000;
  constexpr double p = 0.25;
  const Values hx = random_values(static_cast<std::size_t>(n), 40, 0.5, 1.5);  // never 0: a kept element is never 0 after scaling
  const Values hr = random_values(static_cast<std::size_t>(n), 41);
  Tensor x = dev.from_host(hx, {n}), r = dev.from_host(hr, {n}), y = dev.empty({n}), y_res = dev.empty({n});
  // The mask: a byte per element, in elements of T (n / sizeof(T) of them).
  Tensor mask = dev.empty_mask(n), mask2 = dev.empty_mask(n);
  CHECK(mask.numel() == n / static_cast<std::int64_t>(sizeof(T)));
  dev.dropout(x, Tensor(), y, mask, p, 7);
  dev.dropout(x, r, y_res, mask2, p, 7);  // the same seed draws the same mask
  const Values xs = dev.to_host(x), rs = dev.to_host(r), ys = dev.to_host(y), yrs = dev.to_host(y_res);
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (ys[u] != 0) {
      ++kept;
      CHECK(ys[u] == doctest::Approx(xs[u] / (1 - p)).epsilon(cpu_test::tolerance<T>()));
    }
    CHECK(yrs[u] == doctest::Approx(rs[u] + ys[u]).epsilon(cpu_test::tolerance<T>()));
  }
  // Binomial(n, 0.75): mean 15000, standard deviation √(n p (1 − p)) ≈ 61; 5 σ either side.
  const double nd = static_cast<double>(n);
  CHECK(std::abs(static_cast<double>(kept) - nd * (1 - p)) < 5 * std::sqrt(nd * p * (1 - p)));
  // Another seed draws another mask.
  Tensor y2 = dev.empty({n});
  dev.dropout(x, Tensor(), y2, mask2, p, 8);
  CHECK(dev.to_host(y2) != ys);
  // The backward is the forward's adjoint (a diagonal linear map): <dropout(x), dy> = <x, dropout_backward(dy)>.
  const Values hdy = random_values(static_cast<std::size_t>(n), 42);
  Tensor dy = dev.from_host(hdy, {n}), dx = dev.empty({n});
  dev.dropout_backward(dy, mask, dx, p);  // mask2 holds seed 8's now: the backward reads `mask`
  const Values dys = dev.to_host(dy);
  CHECK(cpu_test::dot(ys, dys) == doctest::Approx(cpu_test::dot(xs, dev.to_host(dx))).epsilon(1e-4));
  // p = 0 is the identity; p outside [0, 1) is refused.
  dev.dropout(x, Tensor(), y2, mask2, 0.0, 7);
  CHECK(dev.to_host(y2) == xs);
  CHECK_THROWS_AS(dev.dropout(x, Tensor(), y2, mask2, 1.0, 7), RuntimeError);
  CHECK_THROWS_AS(dev.dropout_backward(dy, mask, dx, -0.1), RuntimeError);
  Tensor small = dev.empty_mask(n / 2);  // room for half the elements' bytes
  CHECK_THROWS_AS(dev.dropout(x, Tensor(), y2, small, p, 7), RuntimeError);
}

TEST_CASE_TEMPLATE("cpu swiglu: u σ(u) v, backward vs finite differences in both operands", T, float, double) {
  CpuDevice dev(dtype_of<T>());
  Tensor u = dev.from_host(random_values(16, 40, -3.0, 3.0), {4, 4});
  Tensor v = dev.from_host(random_values(16, 41, -2.0, 2.0), {4, 4});
  Tensor y = dev.empty({4, 4});
  const Values us = dev.to_host(u), vs = dev.to_host(v);  // as rounded to T
  auto naive = [](const Values& a, const Values& b) {
    Values out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] / (1 + std::exp(-a[i])) * b[i];
    return out;
  };
  dev.swiglu(u, v, y);
  check_close(dev.to_host(y), naive(us, vs), cpu_test::tolerance<T>());
  const Values r = random_values(16, 42);
  Tensor dy = dev.from_host(r, {4, 4}), du = dev.empty({4, 4}), dv = dev.empty({4, 4});
  dev.swiglu_backward(u, v, dy, du, dv);
  const Values want_u =
      cpu_test::finite_difference([&](const Values& p) { return cpu_test::dot(r, naive(p, vs)); }, us);
  const Values want_v =
      cpu_test::finite_difference([&](const Values& p) { return cpu_test::dot(r, naive(us, p)); }, vs);
  check_close(dev.to_host(du), want_u, cpu_test::fd_tolerance<T>());
  check_close(dev.to_host(dv), want_v, cpu_test::fd_tolerance<T>());
}

}  // namespace spsim::rt
