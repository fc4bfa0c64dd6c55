// CudaDevice layer ops against loop references: linear (+backward), layer_norm (+backward), exact GeLU,
// dropout.
#ifdef SPSIM_WITH_CUDA
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "runtime/core/dropout_mask.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "tests/gpu/fixture.hpp"
#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

TEST_CASE("linear: y = x wT + b; backward dx = dy w, dw += dyT x, db += column sums of dy") {
  const I64 rows = 6, in = 5, out = 4;
  for (const auto& dc : exact_dtypes())
    for (bool accumulate : {false, true}) {
      CAPTURE(rt::dtype_name(dc.dtype));
      CAPTURE(accumulate);
      rt::CudaDevice dev(dc.dtype, 0);
      const Vec x = random_vec(rows * in, 1), w = random_vec(out * in, 2), b = random_vec(out, 3),
                dy = random_vec(rows * out, 4);
      Vec dx = random_vec(rows * in, 5), dw = random_vec(out * in, 6), db = random_vec(out, 7);
      rt::Tensor tx = dev.from_host(x, {rows, in}), tw = dev.from_host(w, {out, in}),
                 tb = dev.from_host(b, {out});
      rt::Tensor ty = dev.empty({rows, out});
      dev.linear(tx, tw, tb, ty);
      Vec y(rows * out);
      for (I64 r = 0; r < rows; ++r)
        for (I64 o = 0; o < out; ++o) {
          double s = b[static_cast<std::size_t>(o)];
          for (I64 i = 0; i < in; ++i)
            s += x[static_cast<std::size_t>(r * in + i)] * w[static_cast<std::size_t>(o * in + i)];
          y[static_cast<std::size_t>(r * out + o)] = s;
        }
      check_close(dev.to_host(ty), y, dc.tol);

      rt::Tensor tdy = dev.from_host(dy, {rows, out}), tdx = dev.from_host(dx, {rows, in}),
                 tdw = dev.from_host(dw, {out, in}), tdb = dev.from_host(db, {out});
      dev.linear_backward(tx, tw, tdy, tdx, tdw, tdb, accumulate);
      for (I64 r = 0; r < rows; ++r)
        for (I64 i = 0; i < in; ++i) {
          double s = 0;
          for (I64 o = 0; o < out; ++o)
            s += dy[static_cast<std::size_t>(r * out + o)] * w[static_cast<std::size_t>(o * in + i)];
          auto& d = dx[static_cast<std::size_t>(r * in + i)];
          d = (accumulate ? d : 0.0) + s;
        }
      for (I64 o = 0; o < out; ++o) {
        for (I64 i = 0; i < in; ++i)
          for (I64 r = 0; r < rows; ++r)
            dw[static_cast<std::size_t>(o * in + i)] +=
                dy[static_cast<std::size_t>(r * out + o)] * x[static_cast<std::size_t>(r * in + i)];
        for (I64 r = 0; r < rows; ++r)
          db[static_cast<std::size_t>(o)] += dy[static_cast<std::size_t>(r * out + o)];
      }
      check_close(dev.to_host(tdx), dx, dc.tol);
      check_close(dev.to_host(tdw), dw, dc.tol);
      check_close(dev.to_host(tdb), db, dc.tol);
    }
}

TEST_CASE("linear without bias and backward without dx or db") {
  rt::CudaDevice dev(rt::DType::f64, 0);
  const Vec x{1, 2, 3, 4}, w{1, 0, 0, 1, 1, 1};  // x [2, 2], w [3, 2]: y = [x0, x1, x0 + x1]
  rt::Tensor tx = dev.from_host(x, {2, 2}), tw = dev.from_host(w, {3, 2}), ty = dev.empty({2, 3});
  dev.linear(tx, tw, rt::Tensor(), ty);
  check_close(dev.to_host(ty), {1, 2, 3, 3, 4, 7}, 0);
  rt::Tensor dy = dev.from_host(Vec(6, 1.0), {2, 3}), dw = dev.zeros({3, 2}), none_dx, none_db;
  dev.linear_backward(tx, tw, dy, none_dx, dw, none_db);
  check_close(dev.to_host(dw), {4, 6, 4, 6, 4, 6}, 0);  // every row of dyᵀ x is the column sums of x
}

TEST_CASE("layer_norm forward saves mean and rstd; backward matches the closed form") {
  const I64 rows = 5, cols = 7;
  const double eps = 1e-5;
  for (const auto& dc : exact_dtypes())
    for (bool accumulate : {false, true}) {
      CAPTURE(rt::dtype_name(dc.dtype));
      CAPTURE(accumulate);
      rt::CudaDevice dev(dc.dtype, 0);
      const Vec x = random_vec(rows * cols, 1, -2, 2), g = random_vec(cols, 2), be = random_vec(cols, 3),
                dy = random_vec(rows * cols, 4);
      const Vec dx0 = random_vec(rows * cols, 5), dg0 = random_vec(cols, 6), db0 = random_vec(cols, 7);
      Vec dx = dx0, dg = dg0, db = db0;  // the backward adds into (or, for dx, may overwrite) these
      Vec y(rows * cols), mean(rows), rstd(rows);
      for (I64 r = 0; r < rows; ++r) {
        double m = 0, v = 0;
        for (I64 c = 0; c < cols; ++c) m += x[static_cast<std::size_t>(r * cols + c)] / cols;
        for (I64 c = 0; c < cols; ++c) v += std::pow(x[static_cast<std::size_t>(r * cols + c)] - m, 2) / cols;
        mean[static_cast<std::size_t>(r)] = m;
        rstd[static_cast<std::size_t>(r)] = 1 / std::sqrt(v + eps);
        for (I64 c = 0; c < cols; ++c) {
          const auto i = static_cast<std::size_t>(r * cols + c);
          const double xh = (x[i] - m) * rstd[static_cast<std::size_t>(r)];
          y[i] = xh * g[static_cast<std::size_t>(c)] + be[static_cast<std::size_t>(c)];
        }
      }
      rt::Tensor tx = dev.from_host(x, {rows, cols}), tg = dev.from_host(g, {cols}),
                 tbe = dev.from_host(be, {cols});
      rt::Tensor ty = dev.empty({rows, cols}), tm = dev.empty({rows}), tr = dev.empty({rows});
      dev.layer_norm(tx, tg, tbe, eps, ty, tm, tr);
      check_close(dev.to_host(ty), y, dc.tol);
      check_close(dev.to_host(tm), mean, dc.tol);
      check_close(dev.to_host(tr), rstd, dc.tol);

      // dx = rstd (g − mean(g) − x̂ mean(g x̂)), g = dy γ; dγ += Σ dy x̂; dβ += Σ dy.
      for (I64 r = 0; r < rows; ++r) {
        double mg = 0, mgx = 0;
        const double rs = rstd[static_cast<std::size_t>(r)], m = mean[static_cast<std::size_t>(r)];
        for (I64 c = 0; c < cols; ++c) {
          const auto i = static_cast<std::size_t>(r * cols + c);
          const double gg = dy[i] * g[static_cast<std::size_t>(c)];
          mg += gg / cols;
          mgx += gg * (x[i] - m) * rs / cols;
        }
        for (I64 c = 0; c < cols; ++c) {
          const auto i = static_cast<std::size_t>(r * cols + c);
          const double xh = (x[i] - m) * rs;
          dx[i] = (accumulate ? dx[i] : 0.0) + rs * (dy[i] * g[static_cast<std::size_t>(c)] - mg - xh * mgx);
          dg[static_cast<std::size_t>(c)] += dy[i] * xh;
          db[static_cast<std::size_t>(c)] += dy[i];
        }
      }
      rt::Tensor tdy = dev.from_host(dy, {rows, cols}), tdx = dev.from_host(dx0, {rows, cols});
      rt::Tensor tdg = dev.from_host(dg0, {cols}), tdb = dev.from_host(db0, {cols});
      dev.layer_norm_backward(tx, tg, tm, tr, tdy, tdx, tdg, tdb, accumulate);
      check_close(dev.to_host(tdx), dx, dc.tol);
      check_close(dev.to_host(tdg), dg, dc.tol);
      check_close(dev.to_host(tdb), db, dc.tol);
    }
}

TEST_CASE("gelu is x Phi(x) and its backward is Phi(x) + x phi(x)") {
  for (const auto& dc : exact_dtypes()) {
    CAPTURE(rt::dtype_name(dc.dtype));
    rt::CudaDevice dev(dc.dtype, 0);
    const Vec x = random_vec(40, 1, -4, 4), dy = random_vec(40, 2);
    Vec y(40), dx(40);
    for (std::size_t i = 0; i < 40; ++i) {
      const double cdf = 0.5 * (1 + std::erf(x[i] / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x[i] * x[i]) / std::sqrt(2 * std::numbers::pi);
      y[i] = x[i] * cdf;
      dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
    rt::Tensor tx = dev.from_host(x, {40}), ty = dev.empty({40}), tdy = dev.from_host(dy, {40}),
               tdx = dev.empty({40});
    dev.gelu(tx, ty);
    dev.gelu_backward(tx, tdy, tdx);
    check_close(dev.to_host(ty), y, dc.tol);
    check_close(dev.to_host(tdx), dx, dc.tol);
  }
}

TEST_CASE("dropout draws the mask of runtime/core/dropout_mask.hpp (the CPU device's); backward reads it") {
  constexpr std::size_t n = 4096;
  constexpr double p = 0.3;
  constexpr std::uint64_t seed = 11;
  for (const auto& dc : exact_dtypes()) {
    CAPTURE(rt::dtype_name(dc.dtype));
    rt::CudaDevice dev(dc.dtype, 0);
    const Vec x = random_vec(n, 3), r = random_vec(n, 4), dy = random_vec(n, 5);
    Vec y(n), dx(n);
    for (std::size_t i = 0; i < n; ++i) {
      const bool keep = rt::dropout_keep(seed, i, p);
      y[i] = r[i] + (keep ? x[i] / (1 - p) : 0.0);
      dx[i] = keep ? dy[i] / (1 - p) : 0.0;
    }
    const auto shape = rt::Shape{static_cast<std::int64_t>(n)};
    rt::Tensor tx = dev.from_host(x, shape), tr = dev.from_host(r, shape), ty = dev.empty(shape),
               tdy = dev.from_host(dy, shape), tdx = dev.empty(shape), mask = dev.empty_mask(shape[0]);
    dev.dropout(tx, tr, ty, mask, p, seed);
    dev.dropout_backward(tdy, mask, tdx, p);
    check_close(dev.to_host(ty), y, dc.tol);
    check_close(dev.to_host(tdx), dx, dc.tol);
  }
}

TEST_CASE("swiglu is u sigma(u) v; its backward dy v sigma(u)(1 + u(1 - sigma(u))) and dy u sigma(u)") {
  for (const auto& dc : exact_dtypes()) {
    CAPTURE(rt::dtype_name(dc.dtype));
    rt::CudaDevice dev(dc.dtype, 0);
    const Vec u = random_vec(40, 3, -4, 4), v = random_vec(40, 4), dy = random_vec(40, 5);
    Vec y(40), du(40), dv(40);
    for (std::size_t i = 0; i < 40; ++i) {
      const double s = 1 / (1 + std::exp(-u[i]));
      y[i] = u[i] * s * v[i];
      du[i] = dy[i] * v[i] * s * (1 + u[i] * (1 - s));
      dv[i] = dy[i] * u[i] * s;
    }
    rt::Tensor tu = dev.from_host(u, {40}), tv = dev.from_host(v, {40}), ty = dev.empty({40}),
               tdy = dev.from_host(dy, {40}), tdu = dev.empty({40}), tdv = dev.empty({40});
    dev.swiglu(tu, tv, ty);
    dev.swiglu_backward(tu, tv, tdy, tdu, tdv);
    check_close(dev.to_host(ty), y, dc.tol);
    check_close(dev.to_host(tdu), du, dc.tol);
    check_close(dev.to_host(tdv), dv, dc.tol);
  }
}

}  // namespace
}  // namespace spsim::gpu_test
#endif
