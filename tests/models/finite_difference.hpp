// Test helpers: directional central finite differences and an independent loop-based attention.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace spsim::test {

[[nodiscard]] inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

[[nodiscard]] inline double norm(const std::vector<double>& a) {
  return std::sqrt(dot(a, a));
}

// One directional derivative, computed two ways: ⟨∇L, u⟩ from the analytic gradient and the central
// difference (L(θ + εu) − L(θ − εu)) / 2ε, whose error is ε²/6 · L'''(θ; u) + O(δ_machine |L| / ε).
// With ε = 1e-5 and O(1) values both terms are ~1e-10, far below the 1e-6 the tests ask for.
struct DirectionalCheck {
  double analytic = 0.0;
  double numeric = 0.0;
  double gradient_norm = 0.0;  // ‖∇L‖, to see that the direction is not nearly orthogonal to it

  [[nodiscard]] double relative_error() const {
    return std::abs(numeric - analytic) / std::max(std::abs(analytic), std::numeric_limits<double>::min());
  }
  // For u ~ N(0, I), ⟨∇L, u⟩ ~ N(0, ‖∇L‖²): below 1 % of ‖∇L‖ with probability ~0.8 %. A degenerate
  // direction would make the relative error meaningless, so the tests require this too.
  [[nodiscard]] bool direction_is_informative() const { return std::abs(analytic) > 1e-2 * gradient_norm; }
};

// `loss` maps a value of θ to L(θ); `theta` is the point, `grad` the analytic ∇L at it, `dir` = u.
[[nodiscard]] inline DirectionalCheck directional_check(
    const std::function<double(const std::vector<double>&)>& loss, const std::vector<double>& theta,
    const std::vector<double>& grad, const std::vector<double>& dir, double eps = 1e-5) {
  std::vector<double> plus = theta;
  std::vector<double> minus = theta;
  for (std::size_t i = 0; i < theta.size(); ++i) {
    plus[i] += eps * dir[i];
    minus[i] -= eps * dir[i];
  }
  return DirectionalCheck{dot(grad, dir), (loss(plus) - loss(minus)) / (2.0 * eps), norm(grad)};
}

// Attention written out with loops, for forward checks. Element accessors take (batch, head, token, dim)
// so the same loops serve the head layout [B*H, S, D] and the token layout [B, S, H*D].
// Query head h reads kv head h / (H / Hkv); causal allows key j for query i iff j <= i;
// o_i = Σ_j softmax_j(s_ij) v_j with s_ij = Σ_d q_id k_jd / √D; lse_i = log Σ_j exp(s_ij).
struct NaiveAttention {
  std::int64_t batch, heads, kv_heads, seq, head_dim;
  bool causal;
  using Read = std::function<double(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>;
  using Write = std::function<void(std::int64_t, std::int64_t, std::int64_t, std::int64_t, double)>;

  // Calls write_o(b, h, i, d, o) for every output element and write_lse(b, h, i, lse) for every row.
  void run(const Read& q, const Read& k, const Read& v, const Write& write_o,
           const std::function<void(std::int64_t, std::int64_t, std::int64_t, double)>& write_lse) const {
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t h = 0; h < heads; ++h) {
        const std::int64_t kvh = h / (heads / kv_heads);
        for (std::int64_t i = 0; i < seq; ++i) {
          const std::int64_t keys = causal ? i + 1 : seq;
          std::vector<double> e(static_cast<std::size_t>(keys));
          double sum = 0.0;
          for (std::int64_t j = 0; j < keys; ++j) {
            double s = 0.0;
            for (std::int64_t d = 0; d < head_dim; ++d) s += q(b, h, i, d) * k(b, kvh, j, d);
            e[static_cast<std::size_t>(j)] = std::exp(scale * s);  // tiny O(1) inputs: no overflow
            sum += e[static_cast<std::size_t>(j)];
          }
          write_lse(b, h, i, std::log(sum));
          for (std::int64_t d = 0; d < head_dim; ++d) {
            double o = 0.0;
            for (std::int64_t j = 0; j < keys; ++j)
              o += e[static_cast<std::size_t>(j)] / sum * v(b, kvh, j, d);
            write_o(b, h, i, d, o);
          }
        }
      }
    }
  }
};

}  // namespace spsim::test
