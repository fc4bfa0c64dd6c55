// CpuDevice: argument-independent plumbing (construction, allocation) and dispatch to the typed kernels.
#include "runtime/cpu/cpu_device.hpp"

#include "runtime/cpu/detail/kernels.hpp"
#include "runtime/host_storage.hpp"

namespace spsim::rt {

CpuDevice::CpuDevice(DType dtype) : dtype_(dtype), pool_(std::make_shared<HostPool>()) {
  if (dtype != DType::f32 && dtype != DType::f64)
    throw RuntimeError("cpu device computes in float32 or float64, not " + std::string(dtype_name(dtype)));
}

template <class F>
decltype(auto) CpuDevice::dispatch(F&& f) const {
  if (dtype_ == DType::f32) return f(float{});
  return f(double{});
}

Tensor CpuDevice::empty(const Shape& shape) {
  return make_host_tensor(shape, dtype_, pool_);
}

void CpuDevice::fill(Tensor& t, double value) {
  dispatch([&](auto tag) { cpu::fill<decltype(tag)>(t, value); });
}

Tensor CpuDevice::from_host(std::span<const double> values, const Shape& shape) {
  Tensor t = empty(shape);
  dispatch([&](auto tag) { cpu::from_host<decltype(tag)>(values, t); });
  return t;
}

std::vector<double> CpuDevice::to_host(const Tensor& t) {
  std::vector<double> out(static_cast<std::size_t>(t.defined() ? t.numel() : 0));
  dispatch([&](auto tag) { cpu::to_host<decltype(tag)>(t, out); });
  return out;
}

void CpuDevice::copy(const Tensor& src, Tensor& dst) {
  dispatch([&](auto tag) { cpu::copy<decltype(tag)>(src, dst); });
}

void CpuDevice::gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha,
                     double beta) {
  dispatch([&](auto tag) { cpu::gemm<decltype(tag)>(a, b, c, ta, tb, alpha, beta); });
}

void CpuDevice::softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) {
  dispatch([&](auto tag) { cpu::softmax<decltype(tag)>(x, y, scale, mask); });
}

void CpuDevice::softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) {
  dispatch([&](auto tag) { cpu::softmax_backward<decltype(tag)>(y, dy, dx, scale); });
}

void CpuDevice::attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o,
                                        Tensor& lse, double scale, const Mask& mask) {
  dispatch([&](auto tag) { cpu::attention_block_forward<decltype(tag)>(q, k, v, o, lse, scale, mask); });
}

void CpuDevice::attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                         const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk,
                                         Tensor& dv, double scale, const Mask& mask) {
  dispatch([&](auto tag) {
    cpu::attention_block_backward<decltype(tag)>(q, k, v, o, d_o, lse, dq, dk, dv, scale, mask);
  });
}

void CpuDevice::merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) {
  dispatch([&](auto tag) { cpu::merge_attention<decltype(tag)>(o, lse, o_blk, lse_blk); });
}

void CpuDevice::add(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  dispatch([&](auto tag) { cpu::add<decltype(tag)>(a, b, out, alpha, beta); });
}

void CpuDevice::scale(Tensor& x, double alpha) {
  dispatch([&](auto tag) { cpu::scale<decltype(tag)>(x, alpha); });
}

Tensor CpuDevice::slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) {
  return dispatch([&](auto tag) { return cpu::slice<decltype(tag)>(x, dim, start, len); });
}

void CpuDevice::slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate) {
  dispatch([&](auto tag) { cpu::slice_assign<decltype(tag)>(dst, dim, start, src, accumulate); });
}

Tensor CpuDevice::concat(std::span<const Tensor> parts, int dim) {
  return dispatch([&](auto tag) { return cpu::concat<decltype(tag)>(parts, dim); });
}

Tensor CpuDevice::permute(const Tensor& x, std::span<const int> perm) {
  return dispatch([&](auto tag) { return cpu::permute<decltype(tag)>(x, perm); });
}

void CpuDevice::linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  dispatch([&](auto tag) { cpu::linear<decltype(tag)>(x, w, b, y); });
}

void CpuDevice::linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                                Tensor& db, bool accumulate_dx, bool /*fp32_dw: dw has the device's dtype*/) {
  dispatch([&](auto tag) { cpu::linear_backward<decltype(tag)>(x, w, dy, dx, dw, db, accumulate_dx); });
}

void CpuDevice::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                           Tensor& mean, Tensor& rstd) {
  dispatch([&](auto tag) { cpu::layer_norm<decltype(tag)>(x, gamma, beta, eps, y, mean, rstd); });
}

void CpuDevice::layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                    const Tensor& rstd, const Tensor& dy, Tensor& dx, Tensor& dgamma,
                                    Tensor& dbeta, bool accumulate_dx) {
  dispatch([&](auto tag) {
    cpu::layer_norm_backward<decltype(tag)>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta, accumulate_dx);
  });
}

void CpuDevice::dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
                        std::uint64_t seed) {
  dispatch([&](auto tag) { cpu::dropout<decltype(tag)>(x, residual, y, mask, p, seed); });
}

void CpuDevice::dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) {
  dispatch([&](auto tag) { cpu::dropout_backward<decltype(tag)>(dy, mask, dx, p); });
}

void CpuDevice::gelu(const Tensor& x, Tensor& y) {
  dispatch([&](auto tag) { cpu::gelu<decltype(tag)>(x, y); });
}

void CpuDevice::gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  dispatch([&](auto tag) { cpu::gelu_backward<decltype(tag)>(x, dy, dx); });
}

void CpuDevice::swiglu(const Tensor& gate, const Tensor& up, Tensor& y) {
  dispatch([&](auto tag) { cpu::swiglu<decltype(tag)>(gate, up, y); });
}

void CpuDevice::swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                                Tensor& dup) {
  dispatch([&](auto tag) { cpu::swiglu_backward<decltype(tag)>(gate, up, dy, dgate, dup); });
}

}  // namespace spsim::rt
