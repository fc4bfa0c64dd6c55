// CpuDevice: the Device op vocabulary computed on the host with Eigen, in float32 or float64.
#pragma once

#include <memory>

#include "runtime/device.hpp"
#include "runtime/host_storage.hpp"

namespace spsim::rt {

// Every op follows the conventions of runtime/device.hpp. Beyond them:
//  * Batched operands (gemm, softmax, attention) may have any rank >= 2: all leading dims are flattened
//    into the batch, so [B, H, s, d] against [B, Hkv, s, d] broadcasts head h to kv head h / (H/Hkv).
//  * linear / layer_norm / gelu flatten leading dims into rows; undefined gamma/beta (layer_norm) or
//    dw/db/dgamma/dbeta (backwards) are skipped.
//  * Shape and dtype misuse throws RuntimeError naming the op and the argument.
// The device holds no mutable state, so instances may be used from different threads at once (one per
// rank); a single instance is as thread-safe as the tensors passed to it.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(DType dtype);  // f32 or f64; anything else throws RuntimeError

  [[nodiscard]] std::string_view name() const override { return "cpu"; }
  [[nodiscard]] DType dtype() const override { return dtype_; }

  [[nodiscard]] Tensor empty(const Shape& shape) override;
  void fill(Tensor& t, double value) override;
  [[nodiscard]] Tensor from_host(std::span<const double> values, const Shape& shape) override;
  [[nodiscard]] std::vector<double> to_host(const Tensor& t) override;
  void copy(const Tensor& src, Tensor& dst) override;

  void gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha = 1.0,
            double beta = 0.0) override;

  void softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask) override;
  void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale) override;
  void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, Tensor& lse,
                               double scale, const Mask& mask) override;
  void attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                                const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv,
                                double scale, const Mask& mask) override;
  void merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk) override;

  void add(const Tensor& a, const Tensor& b, Tensor& out, double alpha = 1.0, double beta = 1.0) override;
  void scale(Tensor& x, double alpha) override;
  [[nodiscard]] Tensor slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) override;
  void slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src,
                    bool accumulate = false) override;
  [[nodiscard]] Tensor concat(std::span<const Tensor> parts, int dim) override;
  [[nodiscard]] Tensor permute(const Tensor& x, std::span<const int> perm) override;

  void linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db,
                       bool accumulate_dx = false, bool fp32_dw = false) override;
  void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                  Tensor& mean, Tensor& rstd) override;
  void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                           const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                           bool accumulate_dx = false) override;
  void dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p,
               std::uint64_t seed) override;
  void dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p) override;
  void gelu(const Tensor& x, Tensor& y) override;
  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override;
  void swiglu(const Tensor& gate, const Tensor& up, Tensor& y) override;
  void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate,
                       Tensor& dup) override;

 private:
  // Calls f(T{}) with T the device's element type.
  template <class F>
  decltype(auto) dispatch(F&& f) const;

  DType dtype_;
  std::shared_ptr<HostPool> pool_;  // recycles this device's buffers (see host_storage.hpp)
};

}  // namespace spsim::rt
