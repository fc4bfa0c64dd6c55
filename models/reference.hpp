// Single-device float64 reference: attention core and one pre-LN transformer layer, forward and
// analytic backward, written directly with Eigen (independent of rt::Device, so it can check the
// Device ops and the distributed strategies). The ground truth of the gradient check (DESIGN.md §8).
//
// Layouts (all row-major, flat std::vector<double> / std::span<const double>):
//   attention core  q, o, dq: [B*H, S, D];  k, v, dk, dv: [B*Hkv, S, D];  lse: [B*H, S]
//   layer           x, y, dx: [B, S, hidden]
// Batch index b*H + h of q is query head h of sample b. It reads kv batch index b*Hkv + h / (H/Hkv)
// (GQA: consecutive groups of H/Hkv query heads share one kv head; MHA is Hkv = H). dk and dv of a
// kv head are the sums over the query heads of its group.
//
// Attention core (Vaswani et al., "Attention is all you need", 2017), per batch index:
//   s = scale · q kᵀ, scale = 1/√D;  causal: key j allowed for query i iff j ≤ i (S_q = S_k = S);
//   the problem's bounds (documents, window) restrict that further (runtime/core/mask_bounds.hpp)
//   p = softmax_rows(s) over allowed keys;  o = p v;  lse_i = log Σ_{allowed j} exp(s_ij)
// Backward (chain rule through the softmax Jacobian diag(p) − p pᵀ of each row):
//   dv = pᵀ do;  dp = do vᵀ;  ds = p ⊙ (dp − rowsum(dp ⊙ p));  dq = scale ds k;  dk = scale dsᵀ q
//
// Layer (pre-LN, as GPT-2/Megatron; parameter names and shapes in models/layer_params.hpp):
//   h1 = LN1(x)                         LN(z) = (z − mean(z)) / √(var(z) + eps) ⊙ gamma + beta over
//                                        hidden, biased variance, eps = kLayerNormEps
//   q = h1 Wqᵀ + bq  [B, S, H*D] → view [B, S, H, D] → permute to [B, H, S, D] = [B*H, S, D]
//   k = h1 Wkᵀ + bk, v = h1 Wvᵀ + bv    likewise with Hkv heads
//   o = attention core(q, k, v)  [B*H, S, D] → permute back to [B, S, H, D] = [B, S, H*D]
//   r1 = x + (o Woᵀ + bo)
//   h2 = LN2(r1)
//   u = h2 W1ᵀ + b1;  g = GeLU(u) = 0.5 u (1 + erf(u/√2))   (exact GeLU, Hendrycks and Gimpel 2016)
//   SwiGLU (model.mlp): also v = h2 W3ᵀ + b3, and g = silu(u) ⊙ v, silu(u) = u σ(u)    (Shazeer 2020)
//   y = r1 + (g W2ᵀ + b2)
// Backward of LN with x̂ = (z − mean) · rstd, rstd = 1/√(var + eps), dx̂ = dy ⊙ gamma, n = hidden:
//   dgamma = Σ_rows dy ⊙ x̂;  dbeta = Σ_rows dy;  dz = rstd (dx̂ − mean(dx̂) − x̂ mean(dx̂ ⊙ x̂))
// Backward of GeLU: du = dg (Φ(u) + u φ(u)), Φ/φ the standard normal CDF/PDF.
// Backward of SwiGLU: du = dg ⊙ v ⊙ σ(u)(1 + u(1 − σ(u))), dv = dg ⊙ silu(u); dh2 sums both branches.
//
// Note for gradient checks: the gradient of bk is identically zero (bk adds q_i·bk to every score of
// row i and the row softmax is shift-invariant), so the reference's dbk is rounding noise (~1e-16).
// Compare dbk by absolute size; a relative error or best-fit scale against it means nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/layer_params.hpp"
#include "models/spec.hpp"

namespace spsim::models {

inline constexpr double kLayerNormEps = 1e-5;

// ---- attention core ----------------------------------------------------------------------------

struct AttnRefOut {
  std::vector<double> o;    // [B*H, S, D]
  std::vector<double> lse;  // [B*H, S]: log-sum-exp of the scaled, allowed scores of each row
};

struct AttnRefGrads {
  std::vector<double> dq;  // [B*H, S, D]
  std::vector<double> dk;  // [B*Hkv, S, D]
  std::vector<double> dv;  // [B*Hkv, S, D]
};

// Throws InputError naming the field unless all sizes are positive and heads % kv_heads == 0.
void check_attention_problem(const AttnProblem& problem);
[[nodiscard]] std::int64_t q_numel(const AttnProblem& problem);   // B*H*S*D
[[nodiscard]] std::int64_t kv_numel(const AttnProblem& problem);  // B*Hkv*S*D

// Input spans must have q_numel / kv_numel elements (std::invalid_argument otherwise).
[[nodiscard]] AttnRefOut attention_forward(const AttnProblem& problem, std::span<const double> q,
                                           std::span<const double> k, std::span<const double> v);
// Gradients of sum(d_o ⊙ o) w.r.t. q, k, v. Recomputes the forward (the reference favours memory).
[[nodiscard]] AttnRefGrads attention_backward(const AttnProblem& problem, std::span<const double> q,
                                              std::span<const double> k, std::span<const double> v,
                                              std::span<const double> d_o);

// ---- one transformer layer ---------------------------------------------------------------------

// The layer's output and the intermediates a distributed implementation can be compared against.
struct LayerRefOut {
  std::vector<double> y;     // [B, S, hidden]
  std::vector<double> h1;    // [B, S, hidden]   LN1(x)
  std::vector<double> q;     // [B*H, S, D]      head layout, as fed to the attention core
  std::vector<double> k;     // [B*Hkv, S, D]
  std::vector<double> v;     // [B*Hkv, S, D]
  std::vector<double> attn;  // [B*H, S, D]      attention core output o
  std::vector<double> r1;    // [B, S, hidden]   first residual sum
  std::vector<double> h2;    // [B, S, hidden]   LN2(r1)
  std::vector<double> u;     // [B, S, ffn]      MLP pre-activation (SwiGLU: the gate's)
};

struct LayerRefGrads {
  std::vector<double> dx;  // [B, S, hidden]
  LayerParams params;      // gradient of every parameter, same names and shapes as the parameters
  std::vector<double> dq;  // [B*H, S, D]   gradient at the attention core's inputs (head layout)
  std::vector<double> dk;  // [B*Hkv, S, D]
  std::vector<double> dv;  // [B*Hkv, S, D]
};

// x must have batch*seq*hidden elements and `params` the shapes of make_layer_params(spec)
// (std::invalid_argument otherwise); a bad spec, batch or seq throws InputError.
[[nodiscard]] LayerRefOut layer_forward(const ModelSpec& spec, std::int64_t batch, std::int64_t seq,
                                        bool causal, const LayerParams& params, std::span<const double> x,
                                        const rt::MaskBounds& bounds = {});
// Gradients of sum(dy ⊙ y) w.r.t. x and every parameter. Recomputes the forward.
[[nodiscard]] LayerRefGrads layer_backward(const ModelSpec& spec, std::int64_t batch, std::int64_t seq,
                                           bool causal, const LayerParams& params, std::span<const double> x,
                                           std::span<const double> dy, const rt::MaskBounds& bounds = {});

}  // namespace spsim::models
