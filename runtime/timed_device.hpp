// TimedDevice: a Device decorator for `spsim run` that sums the wall time of every op per op class
// (the classes of runtime/cost.hpp that the simulator's compute model uses), so a run's compute can be
// held next to the prediction class by class. No backend changes.
#pragma once

#include <array>
#include <chrono>

#include "runtime/device.hpp"

namespace spsim::rt {

struct OpClassStats {
  int calls = 0;
  double seconds = 0;
};
using OpStats = std::array<OpClassStats, kOpClasses>;  // indexed by OpClass

// Host wall time around each call. Exact for synchronous devices (cpu); on asynchronous ones (cuda)
// it is the time to enqueue, and the phase times (which synchronize) are the ones to trust.
// Memory ops (empty, from_host, to_host) are not counted. Not thread-safe (one per rank).
class TimedDevice final : public Device {
 public:
  explicit TimedDevice(Device& inner) : inner_(inner) {}

  [[nodiscard]] const OpStats& stats() const { return stats_; }
  void reset() { stats_ = OpStats{}; }

  [[nodiscard]] std::string_view name() const override { return inner_.name(); }
  [[nodiscard]] DType dtype() const override { return inner_.dtype(); }
  [[nodiscard]] Tensor empty(const Shape& shape) override { return inner_.empty(shape); }
  [[nodiscard]] Tensor empty_accumulator(const Shape& shape) override { return inner_.empty_accumulator(shape); }
  void fill(Tensor& t, double value) override;
  [[nodiscard]] Tensor from_host(std::span<const double> values, const Shape& shape) override {
    return inner_.from_host(values, shape);
  }
  [[nodiscard]] std::vector<double> to_host(const Tensor& t) override { return inner_.to_host(t); }
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
  void begin_phase(std::string_view name) override { inner_.begin_phase(name); }
  void end_phase(std::string_view name) override { inner_.end_phase(name); }
  void synchronize() override { inner_.synchronize(); }

 private:
  // Runs f and adds its wall time to class c.
  template <class F>
  decltype(auto) timed(OpClass c, F&& f);

  Device& inner_;
  OpStats stats_{};
};

}  // namespace spsim::rt
