// TimedDevice: a Device decorator for `spsim run` that sums the wall time of every op per op class
// (the classes of runtime/cost.hpp that the simulator's compute model uses), so a run's compute can be
// held next to the prediction class by class. No backend changes.
#pragma once

#include <array>
#include <chrono>

#include "runtime/device.hpp"

namespace spsim::analysis {

using rt::kOpClasses;  // rt::OpClass values

struct OpClassStats {
  int calls = 0;
  double seconds = 0;
};
using OpStats = std::array<OpClassStats, kOpClasses>;  // indexed by rt::OpClass

// Host wall time around each call. Exact for synchronous devices (cpu); on asynchronous ones (cuda)
// it is the time to enqueue, and the phase times (which synchronize) are the ones to trust.
// Memory ops (empty, from_host, to_host) are not counted. Not thread-safe (one per rank).
class TimedDevice final : public rt::Device {
 public:
  explicit TimedDevice(rt::Device& inner) : inner_(inner) {}

  [[nodiscard]] const OpStats& stats() const { return stats_; }
  void reset() { stats_ = OpStats{}; }

  [[nodiscard]] std::string_view name() const override { return inner_.name(); }
  [[nodiscard]] rt::DType dtype() const override { return inner_.dtype(); }
  [[nodiscard]] rt::Tensor empty(const rt::Shape& shape) override { return inner_.empty(shape); }
  void fill(rt::Tensor& t, double value) override;
  [[nodiscard]] rt::Tensor from_host(std::span<const double> values, const rt::Shape& shape) override {
    return inner_.from_host(values, shape);
  }
  [[nodiscard]] std::vector<double> to_host(const rt::Tensor& t) override { return inner_.to_host(t); }
  void copy(const rt::Tensor& src, rt::Tensor& dst) override;
  void gemm(const rt::Tensor& a, const rt::Tensor& b, rt::Tensor& c, rt::Trans ta, rt::Trans tb,
            double alpha = 1.0, double beta = 0.0) override;
  void softmax(const rt::Tensor& x, rt::Tensor& y, double scale, const rt::Mask& mask) override;
  void softmax_backward(const rt::Tensor& y, const rt::Tensor& dy, rt::Tensor& dx, double scale) override;
  void attention_block_forward(const rt::Tensor& q, const rt::Tensor& k, const rt::Tensor& v, rt::Tensor& o,
                               rt::Tensor& lse, double scale, const rt::Mask& mask) override;
  void attention_block_backward(const rt::Tensor& q, const rt::Tensor& k, const rt::Tensor& v,
                                const rt::Tensor& o, const rt::Tensor& d_o, const rt::Tensor& lse,
                                rt::Tensor& dq, rt::Tensor& dk, rt::Tensor& dv, double scale,
                                const rt::Mask& mask) override;
  void merge_attention(rt::Tensor& o, rt::Tensor& lse, const rt::Tensor& o_blk,
                       const rt::Tensor& lse_blk) override;
  void add(const rt::Tensor& a, const rt::Tensor& b, rt::Tensor& out, double alpha = 1.0,
           double beta = 1.0) override;
  void scale(rt::Tensor& x, double alpha) override;
  [[nodiscard]] rt::Tensor slice(const rt::Tensor& x, int dim, std::int64_t start, std::int64_t len) override;
  void slice_assign(rt::Tensor& dst, int dim, std::int64_t start, const rt::Tensor& src,
                    bool accumulate = false) override;
  [[nodiscard]] rt::Tensor concat(std::span<const rt::Tensor> parts, int dim) override;
  [[nodiscard]] rt::Tensor permute(const rt::Tensor& x, std::span<const int> perm) override;
  void linear(const rt::Tensor& x, const rt::Tensor& w, const rt::Tensor& b, rt::Tensor& y) override;
  void linear_backward(const rt::Tensor& x, const rt::Tensor& w, const rt::Tensor& dy, rt::Tensor& dx,
                       rt::Tensor& dw, rt::Tensor& db, bool accumulate_dx = false) override;
  void layer_norm(const rt::Tensor& x, const rt::Tensor& gamma, const rt::Tensor& beta, double eps,
                  rt::Tensor& y, rt::Tensor& mean, rt::Tensor& rstd) override;
  void layer_norm_backward(const rt::Tensor& x, const rt::Tensor& gamma, const rt::Tensor& mean,
                           const rt::Tensor& rstd, const rt::Tensor& dy, rt::Tensor& dx, rt::Tensor& dgamma,
                           rt::Tensor& dbeta, bool accumulate_dx = false) override;
  void gelu(const rt::Tensor& x, rt::Tensor& y) override;
  void gelu_backward(const rt::Tensor& x, const rt::Tensor& dy, rt::Tensor& dx) override;
  void begin_phase(std::string_view name) override { inner_.begin_phase(name); }
  void end_phase(std::string_view name) override { inner_.end_phase(name); }
  void synchronize() override { inner_.synchronize(); }

 private:
  // Runs f and adds its wall time to class c.
  template <class F>
  decltype(auto) timed(rt::OpClass c, F&& f);

  rt::Device& inner_;
  OpStats stats_{};
};

}  // namespace spsim::analysis
