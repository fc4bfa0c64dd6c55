// Error checks for CUDA runtime, cuBLAS and kernel-launch calls: failures throw rt::RuntimeError.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace spsim::rt::cuda_detail {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

inline void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace spsim::rt::cuda_detail

#define SPSIM_CUDA_CHECK(call) ::spsim::rt::cuda_detail::check_cuda((call), #call, __FILE__, __LINE__)
#define SPSIM_CUBLAS_CHECK(call) ::spsim::rt::cuda_detail::check_cublas((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: reports launch-configuration errors under the kernel's name.
#define SPSIM_CUDA_CHECK_LAUNCH(kernel) \
  ::spsim::rt::cuda_detail::check_cuda(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)
