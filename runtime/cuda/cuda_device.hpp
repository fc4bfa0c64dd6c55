// CudaDevice: the Device op vocabulary on one NVIDIA GPU (cuBLAS GEMMs + CUDA kernels). No CUDA headers.
//
// All work is queued on one compute stream per device, in program order; to_host(), synchronize() and
// the timing queries wait for it. Tensors live in device memory (CudaStorage, from a caching allocator)
// in the device's dtype; Tensor::data<T>() must not be used on them (the pointer is a device address).
// bf16/fp16 compute with fp32 accumulation (GEMMs, reductions), fp32 in fp32, fp64 in fp64.
//
// Attention blocks are composed from cuBLAS GEMMs and row kernels (scores materialised per batch chunk,
// bounded by attention_workspace_bytes): S = scale q kᵀ, P = softmax(S) → O = P v, lse; the backward
// recomputes S and P from the saved lse, as flash-attention does, so only the per-chunk scores are
// held in memory, never the whole [batch, sq, sk] matrix at once.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/device.hpp"

namespace spsim::rt {

// Number of CUDA devices visible to this process; 0 (never an exception) when there is no driver,
// no GPU, or CUDA support was not compiled in.
[[nodiscard]] int cuda_device_count();
// "NVIDIA H200" etc.; throws RuntimeError for an invalid index.
[[nodiscard]] std::string cuda_device_name(int device_index);
// True when t's storage is device memory of a CudaDevice.
[[nodiscard]] bool is_cuda_tensor(const Tensor& t);

// Accumulated GPU time of a named interval (a phase or an op class), measured with CUDA events.
struct TimedInterval {
  std::string name;
  double milliseconds = 0;
  int count = 0;  // completed intervals summed into milliseconds
};

struct CudaMemoryStats {
  std::size_t in_use_bytes = 0;       // held by live tensors and scratch buffers
  std::size_t peak_in_use_bytes = 0;  // maximum of in_use_bytes since construction
  std::size_t reserved_bytes = 0;     // obtained from cudaMalloc (in use + cached for reuse)
};

class CudaDevice final : public Device {
 public:
  // Binds to GPU `device_index` (throws RuntimeError if there is none) and computes in `dtype`.
  CudaDevice(DType dtype, int device_index);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  [[nodiscard]] std::string_view name() const override { return "cuda"; }
  [[nodiscard]] DType dtype() const override;
  [[nodiscard]] int device_index() const;

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

  // ---- timing (CUDA events on the compute stream) ----------------------------------------------
  // Phases may nest; end_phase closes the most recent open phase of that name (an unmatched name is
  // ignored: it is called from destructors and must not throw).
  void begin_phase(std::string_view name) override;
  void end_phase(std::string_view name) override;
  void synchronize() override;
  // Per-phase totals in order of first use; waits for the recorded events.
  [[nodiscard]] std::vector<TimedInterval> phase_times();
  // When on, every op is bracketed by events and summed per OpClass (op_class_name); costs ~µs per op.
  void set_op_timing(bool on);
  [[nodiscard]] std::vector<TimedInterval> op_class_times();
  void reset_times();

  // ---- memory and raw access (for communicators and host-staged transports) -------------------
  [[nodiscard]] CudaMemoryStats memory_stats() const;
  // Upper bound on the attention scratch (scores) per call; chunks over batches to respect it,
  // never below one GQA group. Default 1 GiB.
  void set_attention_workspace_bytes(std::size_t bytes);
  // The compute stream, as an opaque cudaStream_t.
  [[nodiscard]] void* stream_handle() const;
  // Raw bytes of a tensor (its dtype's representation) to/from host memory; both wait for completion.
  void download_bytes(const Tensor& src, std::span<std::byte> dst);
  void upload_bytes(std::span<const std::byte> src, Tensor& dst);

  struct State;  // CUDA handles, allocator, timers (runtime/cuda/detail/state.hpp)

 private:
  std::unique_ptr<State> s_;
};

}  // namespace spsim::rt
