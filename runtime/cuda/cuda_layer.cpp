// CudaDevice transformer-layer ops: linear (+backward), layer_norm (+backward), dropout, gelu and swiglu
// (+backward).
#include <string>

#include "runtime/cuda/detail/state.hpp"

namespace spsim::rt {

using cuda_detail::Index;

namespace {

// x as [rows, cols] where cols is its last dim.
Index rows_of(const Tensor& x, Index cols, const char* what) {
  if (x.ndim() < 1 || x.dim(-1) != cols)
    throw RuntimeError(std::string(what) + ": last dim of " + to_string(x.shape()) + " is not " +
                       std::to_string(cols));
  return cols == 0 ? 0 : x.numel() / cols;
}

void require_numel(const Tensor& t, Index n, const char* what) {
  if (t.numel() != n)
    throw RuntimeError(std::string(what) + " is " + to_string(t.shape()) + ", expected " + std::to_string(n) +
                       " values");
}

}  // namespace

void CudaDevice::linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  cuda_detail::OpScope scope(*s_, OpClass::gemm);
  if (w.ndim() != 2) throw RuntimeError("linear: w must be [out, in], got " + to_string(w.shape()));
  const Index out = w.dim(0), in = w.dim(1);
  const Index rows = rows_of(x, in, "linear x");
  require_numel(y, rows * out, "linear y");
  cuda_detail::batched_gemm(*s_, s_->dtype, s_->dtype, {s_->ptr(x, "x"), 1, rows, in},
                            {s_->ptr(w, "w"), 1, out, in}, s_->ptr(y, "y"), 1, Trans::N, Trans::T, 1.0, 0.0);
  if (b.defined()) {
    require_numel(b, out, "linear b");
    cuda_detail::add_bias(s_->dtype, s_->ptr(y, "y"), s_->ptr(b, "b"), rows, out, s_->stream);
  }
}

void CudaDevice::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                                 Tensor& db, bool accumulate_dx, bool /*fp32_dw: dw has the device's dtype*/) {
  cuda_detail::OpScope scope(*s_, OpClass::gemm);
  if (w.ndim() != 2) throw RuntimeError("linear_backward: w must be [out, in], got " + to_string(w.shape()));
  const Index out = w.dim(0), in = w.dim(1);
  const Index rows = rows_of(x, in, "linear_backward x");
  require_numel(dy, rows * out, "linear_backward dy");
  const cuda_detail::MatRef xm{s_->ptr(x, "x"), 1, rows, in}, wm{s_->ptr(w, "w"), 1, out, in},
      dym{s_->ptr(dy, "dy"), 1, rows, out};
  if (dx.defined()) {  // dx = dy w
    require_numel(dx, rows * in, "linear_backward dx");
    cuda_detail::batched_gemm(*s_, s_->dtype, s_->dtype, dym, wm, s_->ptr(dx, "dx"), 1, Trans::N, Trans::N,
                              1.0, accumulate_dx ? 1.0 : 0.0);
  }
  require_numel(dw, out * in, "linear_backward dw");  // dw += dyᵀ x
  cuda_detail::batched_gemm(*s_, s_->dtype, s_->dtype, dym, xm, s_->ptr(dw, "dw"), 1, Trans::T, Trans::N, 1.0,
                            1.0);
  if (db.defined()) {
    require_numel(db, out, "linear_backward db");
    cuda_detail::column_sum_add(s_->dtype, dym.ptr, s_->ptr(db, "db"), rows, out, s_->stream);
  }
}

void CudaDevice::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  const Index cols = gamma.numel();
  const Index rows = rows_of(x, cols, "layer_norm x");
  require_numel(beta, cols, "layer_norm beta");
  require_numel(y, rows * cols, "layer_norm y");
  require_numel(mean, rows, "layer_norm mean");
  require_numel(rstd, rows, "layer_norm rstd");
  cuda_detail::layer_norm(s_->dtype, s_->ptr(x, "x"), s_->ptr(gamma, "gamma"), s_->ptr(beta, "beta"), eps,
                          s_->ptr(y, "y"), s_->ptr(mean, "mean"), s_->ptr(rstd, "rstd"), rows, cols,
                          s_->stream);
}

void CudaDevice::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                     Tensor& dbeta, bool accumulate_dx) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  const Index cols = gamma.numel();
  const Index rows = rows_of(x, cols, "layer_norm_backward x");
  require_numel(mean, rows, "layer_norm_backward mean");
  require_numel(rstd, rows, "layer_norm_backward rstd");
  require_numel(dy, rows * cols, "layer_norm_backward dy");
  require_numel(dx, rows * cols, "layer_norm_backward dx");
  require_numel(dgamma, cols, "layer_norm_backward dgamma");
  require_numel(dbeta, cols, "layer_norm_backward dbeta");
  const void *px = s_->ptr(x, "x"), *pm = s_->ptr(mean, "mean"), *pr = s_->ptr(rstd, "rstd"),
             *pdy = s_->ptr(dy, "dy");
  cuda_detail::layer_norm_backward_dx(s_->dtype, px, s_->ptr(gamma, "gamma"), pm, pr, pdy, s_->ptr(dx, "dx"),
                                      rows, cols, accumulate_dx, s_->stream);
  cuda_detail::layer_norm_backward_params(s_->dtype, px, pm, pr, pdy, s_->ptr(dgamma, "dgamma"),
                                          s_->ptr(dbeta, "dbeta"), rows, cols, s_->stream);
}

void CudaDevice::dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
                         std::uint64_t seed) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  check_dropout("dropout", p, mask, x.numel());
  require_numel(y, x.numel(), "dropout y");
  if (residual.defined()) require_numel(residual, x.numel(), "dropout residual");
  cuda_detail::dropout(s_->dtype, s_->ptr(x, "x"), residual.defined() ? s_->ptr(residual, "residual") : nullptr,
                       s_->ptr(y, "y"), s_->ptr(mask, "mask"), x.numel(), p, seed, s_->stream);
}

void CudaDevice::dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  check_dropout("dropout_backward", p, mask, dy.numel());
  require_numel(dx, dy.numel(), "dropout_backward dx");
  cuda_detail::dropout_backward(s_->dtype, s_->ptr(dy, "dy"), s_->ptr(mask, "mask"), s_->ptr(dx, "dx"), dy.numel(),
                                p, s_->stream);
}

void CudaDevice::gelu(const Tensor& x, Tensor& y) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  require_numel(y, x.numel(), "gelu y");
  cuda_detail::gelu(s_->dtype, s_->ptr(x, "x"), s_->ptr(y, "y"), x.numel(), s_->stream);
}

void CudaDevice::gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  require_numel(dy, x.numel(), "gelu_backward dy");
  require_numel(dx, x.numel(), "gelu_backward dx");
  cuda_detail::gelu_backward(s_->dtype, s_->ptr(x, "x"), s_->ptr(dy, "dy"), s_->ptr(dx, "dx"), x.numel(),
                             s_->stream);
}

void CudaDevice::swiglu(const Tensor& gate, const Tensor& up, Tensor& y) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  require_numel(up, gate.numel(), "swiglu up");
  require_numel(y, gate.numel(), "swiglu y");
  cuda_detail::swiglu(s_->dtype, s_->ptr(gate, "gate"), s_->ptr(up, "up"), s_->ptr(y, "y"), gate.numel(),
                      s_->stream);
}

void CudaDevice::swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                                 Tensor& dup) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&up, "swiglu_backward up"},
                                {&dy, "swiglu_backward dy"}, {&dgate, "swiglu_backward dgate"},
                                {&dup, "swiglu_backward dup"}})
    require_numel(*t, gate.numel(), name);
  cuda_detail::swiglu_backward(s_->dtype, s_->ptr(gate, "gate"), s_->ptr(up, "up"), s_->ptr(dy, "dy"),
                               s_->ptr(dgate, "dgate"), s_->ptr(dup, "dup"), gate.numel(), s_->stream);
}

}  // namespace spsim::rt
