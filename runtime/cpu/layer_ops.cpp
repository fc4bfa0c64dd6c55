// CPU transformer-layer elementwise ops: LayerNorm, exact (erf) GeLU, SwiGLU and dropout, forward and
// backward.
#include <cmath>
#include <numbers>
#include <string>
#include <type_traits>

#include "runtime/core/dropout_mask.hpp"
#include "runtime/cpu/detail/kernels.hpp"

namespace spsim::rt::cpu {

namespace {

template <class T>
using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;

// gamma, or ones when the layer norm has no affine scale.
template <class T>
RowArray<T> row_or(const Tensor& t, std::int64_t n, T fallback, std::string_view op, std::string_view arg) {
  if (!t.defined()) return RowArray<T>::Constant(n, fallback);
  expect_shape(t, {n}, op, arg);
  return Eigen::Map<const RowArray<T>>(data_of<T>(t, op, arg), n);
}

struct Rows {
  std::int64_t rows = 0, width = 0;
};

Rows rows_of(const Tensor& x, std::string_view op) {
  if (x.ndim() < 1 || x.dim(-1) == 0) fail(op, "x " + to_string(x.shape()) + " has no features to normalise");
  return {x.numel() / x.dim(-1), x.dim(-1)};
}

void expect_numel(const Tensor& t, std::int64_t n, std::string_view op, std::string_view arg) {
  if (t.numel() != n)
    fail(op, "argument '" + std::string(arg) + "' has shape " + to_string(t.shape()) + ", expected " +
                 std::to_string(n) + " elements (one per row)");
}

// Standard normal cdf Φ and pdf φ.
template <class T>
T normal_cdf(T x) {
  return T(0.5) * (T(1) + std::erf(x * static_cast<T>(1.0 / std::numbers::sqrt2)));
}
template <class T>
T normal_pdf(T x) {
  return std::exp(T(-0.5) * x * x) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
}

}  // namespace

template <class T>
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                Tensor& rstd) {
  constexpr std::string_view op = "layer_norm";
  const T* px = data_of<T>(x, op, "x");
  const auto [rows, width] = rows_of(x, op);
  expect_shape(y, x.shape(), op, "y");
  expect_numel(mean, rows, op, "mean");
  expect_numel(rstd, rows, op, "rstd");
  const RowArray<T> g = row_or<T>(gamma, width, T(1), op, "gamma");
  const RowArray<T> b = row_or<T>(beta, width, T(0), op, "beta");
  const ConstMatMap<T> xm(px, rows, width);
  MatMap<T> ym(data_of<T>(y, op, "y"), rows, width);
  ColMap<T> mu(data_of<T>(mean, op, "mean"), rows), rs(data_of<T>(rstd, op, "rstd"), rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    // Two passes (mean, then centred squares) avoid the cancellation of E[x²] − E[x]²; the variance is
    // the biased one, as torch.nn.LayerNorm uses.
    mu(r) = xm.row(r).mean();
    const T var = (xm.row(r).array() - mu(r)).square().mean();
    rs(r) = T(1) / std::sqrt(var + static_cast<T>(eps));
    ym.row(r).array() = (xm.row(r).array() - mu(r)) * rs(r) * g + b;
  }
}

// With x̂ = (x − μ)·rstd and g = dy ⊙ γ (all per row of width n):
// dx = rstd · (g − mean(g) − x̂ · mean(g ⊙ x̂)), dγ = Σ_rows dy ⊙ x̂, dβ = Σ_rows dy.
template <class T>
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta, bool accumulate_dx) {
  constexpr std::string_view op = "layer_norm_backward";
  const T* px = data_of<T>(x, op, "x");
  const auto [rows, width] = rows_of(x, op);
  expect_shape(dy, x.shape(), op, "dy");
  expect_numel(mean, rows, op, "mean");
  expect_numel(rstd, rows, op, "rstd");
  const RowArray<T> gam = row_or<T>(gamma, width, T(1), op, "gamma");
  const ConstMatMap<T> xm(px, rows, width), dym(data_of<T>(dy, op, "dy"), rows, width);
  const ConstColMap<T> mu(data_of<T>(mean, op, "mean"), rows), rs(data_of<T>(rstd, op, "rstd"), rows);
  T* pdx = nullptr;
  if (dx.defined()) {
    expect_shape(dx, x.shape(), op, "dx");
    pdx = data_of<T>(dx, op, "dx");
  }
  MatMap<T> dxm(pdx, pdx == nullptr ? 0 : rows, width);
  RowArray<T> dgam = RowArray<T>::Zero(width), dbet = RowArray<T>::Zero(width);
  RowArray<T> xhat(width), g(width);
  for (std::int64_t r = 0; r < rows; ++r) {
    xhat = (xm.row(r).array() - mu(r)) * rs(r);
    g = dym.row(r).array() * gam;
    dgam += dym.row(r).array() * xhat;
    dbet += dym.row(r).array();
    if (pdx == nullptr) continue;
    auto dxr = dxm.row(r).array();
    const T g_mean = g.mean(), gx_mean = (g * xhat).mean();
    if (accumulate_dx)
      dxr += rs(r) * (g - g_mean - xhat * gx_mean);
    else
      dxr = rs(r) * (g - g_mean - xhat * gx_mean);
  }
  if (dgamma.defined()) {
    expect_shape(dgamma, {width}, op, "dgamma");
    Eigen::Map<RowArray<T>>(data_of<T>(dgamma, op, "dgamma"), width) += dgam;
  }
  if (dbeta.defined()) {
    expect_shape(dbeta, {width}, op, "dbeta");
    Eigen::Map<RowArray<T>>(data_of<T>(dbeta, op, "dbeta"), width) += dbet;
  }
}

namespace {
// The bytes of a dropout mask (Device::empty_mask: a byte per element, in T-sized elements) after the
// checks every device makes; M is T or const T.
template <class M, class Mask>
auto mask_bytes(Mask& mask, double p, const Tensor& of, std::string_view op) {
  Device::check_dropout(op, p, mask, of.numel());
  M* m = data_of<std::remove_const_t<M>>(mask, op, "mask");
  using Byte = std::conditional_t<std::is_const_v<M>, const unsigned char, unsigned char>;
  return reinterpret_cast<Byte*>(m);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast): its bytes
}
}  // namespace

template <class T>
void dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p, std::uint64_t seed) {
  constexpr std::string_view op = "dropout";
  const T* px = data_of<T>(x, op, "x");
  const T* pr = residual.defined() ? data_of<T>(residual, op, "residual") : nullptr;
  T* py = data_of<T>(y, op, "y");
  unsigned char* keep = mask_bytes<T>(mask, p, x, op);  // NOLINT(misc-const-correctness)
  expect_shape(y, x.shape(), op, "y");
  if (pr != nullptr) expect_shape(residual, x.shape(), op, "residual");
  const T keep_scale = T(1) / (T(1) - static_cast<T>(p));
  for (std::int64_t i = 0, n = x.numel(); i < n; ++i) {
    keep[i] = dropout_keep(seed, static_cast<std::uint64_t>(i), p) ? 1 : 0;
    const T kept = keep[i] != 0 ? px[i] * keep_scale : T(0);
    py[i] = pr != nullptr ? pr[i] + kept : kept;
  }
}

template <class T>
void dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) {
  constexpr std::string_view op = "dropout_backward";
  const T* pdy = data_of<T>(dy, op, "dy");
  T* pdx = data_of<T>(dx, op, "dx");
  const unsigned char* keep = mask_bytes<const T>(mask, p, dy, op);
  expect_shape(dx, dy.shape(), op, "dx");
  const T keep_scale = T(1) / (T(1) - static_cast<T>(p));
  for (std::int64_t i = 0, n = dy.numel(); i < n; ++i) pdx[i] = keep[i] != 0 ? pdy[i] * keep_scale : T(0);
}

template <class T>
void gelu(const Tensor& x, Tensor& y) {
  const T* px = data_of<T>(x, "gelu", "x");
  T* py = data_of<T>(y, "gelu", "y");
  expect_shape(y, x.shape(), "gelu", "y");
  for (std::int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = px[i] * normal_cdf(px[i]);
}

template <class T>
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  constexpr std::string_view op = "gelu_backward";
  const T* px = data_of<T>(x, op, "x");
  const T* pdy = data_of<T>(dy, op, "dy");
  T* pdx = data_of<T>(dx, op, "dx");
  expect_shape(dy, x.shape(), op, "dy");
  expect_shape(dx, x.shape(), op, "dx");
  for (std::int64_t i = 0, n = x.numel(); i < n; ++i)
    pdx[i] = pdy[i] * (normal_cdf(px[i]) + px[i] * normal_pdf(px[i]));
}

// silu(u) = u σ(u), σ(u) = 1 / (1 + e^−u).
template <class T>
T sigmoid(T u) {
  return T(1) / (T(1) + std::exp(-u));
}

template <class T>
void swiglu(const Tensor& gate, const Tensor& up, Tensor& y) {
  constexpr std::string_view op = "swiglu";
  const T* pg = data_of<T>(gate, op, "gate");
  const T* pu = data_of<T>(up, op, "up");
  T* py = data_of<T>(y, op, "y");
  expect_shape(up, gate.shape(), op, "up");
  expect_shape(y, gate.shape(), op, "y");
  for (std::int64_t i = 0, n = gate.numel(); i < n; ++i) py[i] = pg[i] * sigmoid(pg[i]) * pu[i];
}

// d/du [u σ(u)] = σ(u) (1 + u (1 − σ(u))).
template <class T>
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup) {
  constexpr std::string_view op = "swiglu_backward";
  const T* pg = data_of<T>(gate, op, "gate");
  const T* pu = data_of<T>(up, op, "up");
  const T* pdy = data_of<T>(dy, op, "dy");
  T* pdg = data_of<T>(dgate, op, "dgate");
  T* pdu = data_of<T>(dup, op, "dup");
  expect_shape(up, gate.shape(), op, "up");
  expect_shape(dy, gate.shape(), op, "dy");
  expect_shape(dgate, gate.shape(), op, "dgate");
  expect_shape(dup, gate.shape(), op, "dup");
  for (std::int64_t i = 0, n = gate.numel(); i < n; ++i) {
    const T u = pg[i], v = pu[i], g = pdy[i], s = sigmoid(u);
    pdg[i] = g * v * s * (T(1) + u * (T(1) - s));
    pdu[i] = g * u * s;
  }
}

#define SPSIM_INSTANTIATE(T)                                                                         \
  template void layer_norm<T>(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, Tensor&, \
                              Tensor&);                                                              \
  template void layer_norm_backward<T>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,   \
                                       const Tensor&, Tensor&, Tensor&, Tensor&, bool);              \
  template void dropout<T>(const Tensor&, const Tensor&, Tensor&, Tensor&, double, std::uint64_t);    \
  template void dropout_backward<T>(const Tensor&, const Tensor&, Tensor&, double);                   \
  template void gelu<T>(const Tensor&, Tensor&);                                                     \
  template void gelu_backward<T>(const Tensor&, const Tensor&, Tensor&);                             \
  template void swiglu<T>(const Tensor&, const Tensor&, Tensor&);                                   \
  template void swiglu_backward<T>(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&);
SPSIM_INSTANTIATE(float)
SPSIM_INSTANTIATE(double)
#undef SPSIM_INSTANTIATE

}  // namespace spsim::rt::cpu
