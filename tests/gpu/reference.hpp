// Naive host reference implementations (double, row-major loops) of the Device ops, written from the
// formulas in runtime/device.hpp, plus comparison helpers for the GPU tests.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace spsim::gpu_test {

using Vec = std::vector<double>;
using I64 = std::int64_t;

inline Vec random_vec(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Relative error ‖got − want‖ / ‖want‖ (absolute when want is 0) must be within tol; equal sizes;
// infinities must match exactly.
inline void check_close(const Vec& got, const Vec& want, double tol) {
  REQUIRE(got.size() == want.size());
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      CAPTURE(i);
      CHECK(got[i] == want[i]);
      continue;
    }
    diff2 += (got[i] - want[i]) * (got[i] - want[i]);
    ref2 += want[i] * want[i];
  }
  const double err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  CAPTURE(err);
  CHECK(err <= tol);
}

// Element (b, r, c) of a row-major [batch, rows, cols] tensor.
inline double at(const Vec& v, I64 rows, I64 cols, I64 b, I64 r, I64 c) {
  return v[static_cast<std::size_t>((b * rows + r) * cols + c)];
}

// c = alpha Σ op(a_i) op(b_i) + beta c with device.hpp's batch broadcasting (N = largest batch count).
struct GemmCase {
  I64 ba, ra, ca, bb, rb, cb, bc;
  bool ta, tb;
};
inline Vec gemm_ref(const GemmCase& g, const Vec& a, const Vec& b, const Vec& c0, double alpha, double beta) {
  const I64 m = g.ta ? g.ca : g.ra, k = g.ta ? g.ra : g.ca, n = g.tb ? g.rb : g.cb;
  const I64 nb = std::max({g.ba, g.bb, g.bc});
  Vec c(c0.size());
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = beta * c0[i];
  for (I64 i = 0; i < nb; ++i) {
    const I64 ia = i / (nb / g.ba), ib = i / (nb / g.bb), ic = i / (nb / g.bc);
    for (I64 r = 0; r < m; ++r)
      for (I64 col = 0; col < n; ++col) {
        double sum = 0;
        for (I64 x = 0; x < k; ++x) {
          const double av = g.ta ? at(a, g.ra, g.ca, ia, x, r) : at(a, g.ra, g.ca, ia, r, x);
          const double bv = g.tb ? at(b, g.rb, g.cb, ib, col, x) : at(b, g.rb, g.cb, ib, x, col);
          sum += av * bv;
        }
        c[static_cast<std::size_t>((ic * m + r) * n + col)] += alpha * sum;
      }
  }
  return c;
}

struct MaskRef {
  bool causal = false;
  std::vector<I64> rows, cols;
  [[nodiscard]] bool allowed(I64 r, I64 c) const {
    return !causal || cols[static_cast<std::size_t>(c)] <= rows[static_cast<std::size_t>(r)];
  }
};

// Row softmax of scale·x over allowed columns; a fully masked row is 0 and its lse −inf.
inline void softmax_ref(const Vec& x, I64 batch, I64 rows, I64 cols, double scale, const MaskRef& m, Vec& y,
                        Vec* lse = nullptr) {
  y.assign(x.size(), 0.0);
  if (lse) lse->assign(static_cast<std::size_t>(batch * rows), 0.0);
  for (I64 b = 0; b < batch; ++b)
    for (I64 r = 0; r < rows; ++r) {
      double mx = -std::numeric_limits<double>::infinity();
      for (I64 c = 0; c < cols; ++c)
        if (m.allowed(r, c)) mx = std::max(mx, scale * at(x, rows, cols, b, r, c));
      double sum = 0;
      for (I64 c = 0; c < cols; ++c)
        if (m.allowed(r, c)) sum += std::exp(scale * at(x, rows, cols, b, r, c) - mx);
      for (I64 c = 0; c < cols; ++c)
        if (m.allowed(r, c))
          y[static_cast<std::size_t>((b * rows + r) * cols + c)] =
              std::exp(scale * at(x, rows, cols, b, r, c) - mx) / sum;
      if (lse) (*lse)[static_cast<std::size_t>(b * rows + r)] = sum > 0 ? mx + std::log(sum) : mx;
    }
}

struct AttnCase {
  I64 bq, bk, sq, sk, d;
  double scale;
  MaskRef mask;
};

// o = softmax(scale q kᵀ) v per query batch, k/v batch = b / (bq / bk); lse as softmax_ref.
inline void attention_forward_ref(const AttnCase& a, const Vec& q, const Vec& k, const Vec& v, Vec& o,
                                  Vec& lse) {
  const I64 g = a.bq / a.bk;
  o.assign(static_cast<std::size_t>(a.bq * a.sq * a.d), 0.0);
  lse.assign(static_cast<std::size_t>(a.bq * a.sq), 0.0);
  for (I64 b = 0; b < a.bq; ++b) {
    Vec s(static_cast<std::size_t>(a.sq * a.sk)), p, l;
    for (I64 r = 0; r < a.sq; ++r)
      for (I64 c = 0; c < a.sk; ++c) {
        double dot = 0;
        for (I64 x = 0; x < a.d; ++x) dot += at(q, a.sq, a.d, b, r, x) * at(k, a.sk, a.d, b / g, c, x);
        s[static_cast<std::size_t>(r * a.sk + c)] = dot;
      }
    softmax_ref(s, 1, a.sq, a.sk, a.scale, a.mask, p, &l);
    for (I64 r = 0; r < a.sq; ++r) {
      lse[static_cast<std::size_t>(b * a.sq + r)] = l[static_cast<std::size_t>(r)];
      for (I64 x = 0; x < a.d; ++x) {
        double sum = 0;
        for (I64 c = 0; c < a.sk; ++c)
          sum += p[static_cast<std::size_t>(r * a.sk + c)] * at(v, a.sk, a.d, b / g, c, x);
        o[static_cast<std::size_t>((b * a.sq + r) * a.d + x)] = sum;
      }
    }
  }
}

// device.hpp's backward: p = exp(scale q·k − lse) (0 if masked or lse = −inf), D = do·o,
// ds = p (do·v − D); dq += scale ds k, dk += scale dsᵀ q, dv += pᵀ do (summed over the GQA group).
inline void attention_backward_ref(const AttnCase& a, const Vec& q, const Vec& k, const Vec& v, const Vec& o,
                                   const Vec& d_o, const Vec& lse, Vec& dq, Vec& dk, Vec& dv) {
  const I64 g = a.bq / a.bk;
  for (I64 b = 0; b < a.bq; ++b)
    for (I64 r = 0; r < a.sq; ++r) {
      const double l = lse[static_cast<std::size_t>(b * a.sq + r)];
      double dsum = 0;
      for (I64 x = 0; x < a.d; ++x) dsum += at(d_o, a.sq, a.d, b, r, x) * at(o, a.sq, a.d, b, r, x);
      for (I64 c = 0; c < a.sk; ++c) {
        if (!a.mask.allowed(r, c) || std::isinf(l)) continue;
        double qk = 0, dov = 0;
        for (I64 x = 0; x < a.d; ++x) {
          qk += at(q, a.sq, a.d, b, r, x) * at(k, a.sk, a.d, b / g, c, x);
          dov += at(d_o, a.sq, a.d, b, r, x) * at(v, a.sk, a.d, b / g, c, x);
        }
        const double p = std::exp(a.scale * qk - l), ds = p * (dov - dsum);
        for (I64 x = 0; x < a.d; ++x) {
          dq[static_cast<std::size_t>((b * a.sq + r) * a.d + x)] +=
              a.scale * ds * at(k, a.sk, a.d, b / g, c, x);
          dk[static_cast<std::size_t>((b / g * a.sk + c) * a.d + x)] +=
              a.scale * ds * at(q, a.sq, a.d, b, r, x);
          dv[static_cast<std::size_t>((b / g * a.sk + c) * a.d + x)] += p * at(d_o, a.sq, a.d, b, r, x);
        }
      }
    }
}

}  // namespace spsim::gpu_test
