// CudaDevice::State: the CUDA handles behind a CudaDevice, and helpers its op files share.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda/detail/allocator.hpp"
#include "runtime/cuda/detail/event_timer.hpp"
#include "runtime/cuda/detail/kernels.hpp"

namespace spsim::rt {

struct CudaDevice::State {
  DType dtype = DType::f32;
  int index = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::shared_ptr<cuda_detail::CachingAllocator> allocator;
  cuda_detail::EventTimer phases;
  cuda_detail::EventTimer op_classes;
  bool op_timing = false;
  std::size_t attention_workspace_bytes = std::size_t{1} << 30;

  // Makes this device current for the calling thread (threads of one process may drive several).
  void activate() const;
  // Scratch device memory, returned to the cache when the pointer is dropped.
  [[nodiscard]] std::shared_ptr<cuda_detail::CudaStorage> scratch(std::size_t bytes) const;
  // A tensor's device pointer after checking it is a CUDA tensor of this device's dtype.
  [[nodiscard]] void* ptr(const Tensor& t, std::string_view what) const;
};

namespace cuda_detail {

// Brackets one public op: makes the device current and, when op timing is on, times it by class.
class OpScope {
 public:
  OpScope(CudaDevice::State& s, OpClass c);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  CudaDevice::State& s_;
  OpClass class_;
};

// Operand of a batched GEMM: row-major [batch, rows, cols] as stored (before any transpose).
struct MatRef {
  const void* ptr = nullptr;
  Index batch = 1, rows = 0, cols = 0;
};

// c = alpha op(a) op(b) + beta c over batches, with device.hpp's broadcasting: the op's batch count is
// N = max(a.batch, b.batch, c_batch); batch i reads a[i / (N / a.batch)] etc., and a smaller c receives
// the sum over the batches that map to it. a, b are of dtype `in`; c of `out` (in, or fp32 for bf16/fp16).
void batched_gemm(const CudaDevice::State& s, DType in, DType out, const MatRef& a, const MatRef& b, void* c,
                  Index c_batch, Trans ta, Trans tb, double alpha, double beta);

}  // namespace cuda_detail
}  // namespace spsim::rt
