// TimedDevice: per-op-class wall time around every forwarded op (classes as runtime/cost.cpp assigns).
#include "runtime/timed_device.hpp"

namespace spsim::rt {

template <class F>
decltype(auto) TimedDevice::timed(OpClass c, F&& f) {
  struct Stop {  // adds the time on every exit, the result's return included
    OpClassStats& s;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Stop() {
      s.calls += 1;
      s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } stop{stats_[static_cast<std::size_t>(c)]};
  return f();
}

void TimedDevice::fill(Tensor& t, double value) {
  timed(OpClass::copy, [&] { inner_.fill(t, value); });
}
void TimedDevice::copy(const Tensor& src, Tensor& dst) {
  timed(OpClass::copy, [&] { inner_.copy(src, dst); });
}
void TimedDevice::gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha,
                       double beta) {
  timed(OpClass::gemm, [&] { inner_.gemm(a, b, c, ta, tb, alpha, beta); });
}
void TimedDevice::softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) {
  timed(OpClass::softmax, [&] { inner_.softmax(x, y, scale, mask); });
}
void TimedDevice::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) {
  timed(OpClass::softmax, [&] { inner_.softmax_backward(y, dy, dx, scale); });
}
void TimedDevice::attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                          Tensor& lse, double scale, const Mask& mask) {
  timed(OpClass::attention_forward, [&] { inner_.attention_block_forward(q, k, v, o, lse, scale, mask); });
}
void TimedDevice::attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                           const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk,
                                           Tensor& dv, double scale, const Mask& mask) {
  timed(OpClass::attention_backward,
        [&] { inner_.attention_block_backward(q, k, v, o, d_o, lse, dq, dk, dv, scale, mask); });
}
void TimedDevice::merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) {
  timed(OpClass::elementwise, [&] { inner_.merge_attention(o, lse, o_blk, lse_blk); });
}
void TimedDevice::add(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  timed(OpClass::elementwise, [&] { inner_.add(a, b, out, alpha, beta); });
}
void TimedDevice::scale(Tensor& x, double alpha) {
  timed(OpClass::elementwise, [&] { inner_.scale(x, alpha); });
}
Tensor TimedDevice::slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) {
  return timed(OpClass::copy, [&] { return inner_.slice(x, dim, start, len); });
}
void TimedDevice::slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate) {
  timed(accumulate ? OpClass::elementwise : OpClass::copy,
        [&] { inner_.slice_assign(dst, dim, start, src, accumulate); });
}
Tensor TimedDevice::concat(std::span<const Tensor> parts, int dim) {
  return timed(OpClass::copy, [&] { return inner_.concat(parts, dim); });
}
Tensor TimedDevice::permute(const Tensor& x, std::span<const int> perm) {
  return timed(OpClass::copy, [&] { return inner_.permute(x, perm); });
}
void TimedDevice::linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  timed(OpClass::gemm, [&] { inner_.linear(x, w, b, y); });
}
void TimedDevice::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                                  Tensor& db, bool accumulate_dx, bool fp32_dw) {
  timed(OpClass::gemm, [&] { inner_.linear_backward(x, w, dy, dx, dw, db, accumulate_dx, fp32_dw); });
}
void TimedDevice::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                             Tensor& mean, Tensor& rstd) {
  timed(OpClass::elementwise, [&] { inner_.layer_norm(x, gamma, beta, eps, y, mean, rstd); });
}
void TimedDevice::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                      Tensor& dbeta, bool accumulate_dx) {
  timed(OpClass::elementwise,
        [&] { inner_.layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, accumulate_dx); });
}
void TimedDevice::dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
                          std::uint64_t seed) {
  timed(OpClass::elementwise, [&] { inner_.dropout(x, residual, y, mask, p, seed); });
}
void TimedDevice::dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) {
  timed(OpClass::elementwise, [&] { inner_.dropout_backward(dy, mask, dx, p); });
}
void TimedDevice::gelu(const Tensor& x, Tensor& y) {
  timed(OpClass::elementwise, [&] { inner_.gelu(x, y); });
}
void TimedDevice::gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  timed(OpClass::elementwise, [&] { inner_.gelu_backward(x, dy, dx); });
}
void TimedDevice::swiglu(const Tensor& gate, const Tensor& up, Tensor& y) {
  timed(OpClass::elementwise, [&] { inner_.swiglu(gate, up, y); });
}
void TimedDevice::swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                                  Tensor& dup) {
  timed(OpClass::elementwise, [&] { inner_.swiglu_backward(gate, up, dy, dgate, dup); });
}

}  // namespace spsim::rt
