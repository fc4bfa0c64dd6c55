// TraceDevice: a Device that carries no data; it validates each op like a real backend and records
// its cost (runtime/cost.hpp), allocations and frees into a Recorder.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "runtime/cost.hpp"
#include "runtime/device.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::rt::trace {

class TraceDevice final : public Device {
 public:
  // dtype: the element type of the simulated hardware (bf16, fp16, f32, f64); every tensor has it but
  // accumulators (empty_accumulator: f32 on a bf16 or fp16 device), which fill, copy and add price at
  // their own width, and which the attention backward takes as its gradients (priced as the dtype's,
  // its dq accumulation pass as fp32: cost::Accumulated).
  TraceDevice(DType dtype, Recorder recorder);

  [[nodiscard]] std::string_view name() const override { return "trace"; }
  [[nodiscard]] DType dtype() const override { return dtype_; }

  [[nodiscard]] Tensor empty(const Shape& shape) override;
  [[nodiscard]] Tensor empty_accumulator(const Shape& shape) override;
  void fill(Tensor& t, double value) override;
  // Records the allocation only: host inputs are notional and exist before the step. `values` may
  // be empty (no data supplied) or hold numel(shape) values, which are ignored.
  [[nodiscard]] Tensor from_host(std::span<const double> values, const Shape& shape) override;
  [[nodiscard]] std::vector<double> to_host(const Tensor& t) override;  // numel zeros, nothing recorded
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

  void begin_phase(std::string_view name) override;
  void end_phase(std::string_view name) override;

 private:
  void check(const Tensor& t, const char* op, const char* what) const;  // defined, device dtype
  // Defined, the device's dtype or its accumulators'.
  void check_or_accumulator(const Tensor& t, const char* op, const char* what) const;
  // A tensor of `dt` (empty: the device's; empty_accumulator: its accumulator type); `op` names the
  // call in the error for a negative dimension.
  [[nodiscard]] Tensor allocate(const Shape& shape, DType dt, const char* op);
  void check_all(const char* op, std::initializer_list<std::pair<const Tensor*, const char*>> tensors) const;
  // Records a ComputeOp with these operand shapes (interned; nothing is copied when the table has them).
  void record(std::string_view op, const OpCost& cost, std::initializer_list<std::reference_wrapper<const Shape>> shapes,
              bool skipped = false);
  void record(std::string_view op, const OpCost& cost, const std::vector<Shape>& shapes, bool skipped = false);
  void record(std::string_view op, const OpCost& cost, std::span<const Shape* const> shapes, bool skipped);
  DType dtype_;
  Recorder recorder_;
  // Storage id of an attention block's output → the fraction of its rows that saw a key, until the
  // block is merged (merge_attention prices only those rows).
  std::unordered_map<std::uint64_t, double> block_rows_;
  // Storage ids of tensors zero-filled and not written since: a backward block's first contribution
  // to such a gradient is the kernel's own output; into any other it is added by a pass
  // (cost::attention_backward's `accumulated`).
  std::unordered_set<std::uint64_t> cleared_;
  void written(const Tensor& t) { cleared_.erase(t.storage()->id()); }
};

// Data-less storage of `bytes`: records an Alloc now and a Free when the last reference goes.
[[nodiscard]] std::shared_ptr<Storage> make_trace_storage(std::size_t bytes, Recorder recorder);

}  // namespace spsim::rt::trace
