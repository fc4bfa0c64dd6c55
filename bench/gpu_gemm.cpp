// GEMM throughput through CudaDevice::gemm vs cuBLAS called directly on the same buffers and shapes
// (bf16 and fp32), printed as TFLOP/s and their ratio. Exits 1 when a ratio is under the 70%
// target, 77 when there is no GPU or no CUDA build.
#include <cstdio>

#ifdef SPSIM_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_device.hpp"

namespace {

using spsim::rt::CudaDevice;
using spsim::rt::DType;
using spsim::rt::Tensor;
using spsim::rt::Trans;

struct GemmShape {
  const char* what;
  std::int64_t batch, m, n, k;
  Trans tb;  // a is always N; b is [k, n] (N) or [n, k] (T, as x wᵀ and q kᵀ)
};

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + cublasGetStatusString(s));
}

// Mean milliseconds per call of f() over enough calls for ~0.2 s, after warm-up; `sync` drains the queue.
template <class F, class S>
double time_ms(F&& f, S&& sync) {
  for (int i = 0; i < 3; ++i) f();
  sync();
  auto t0 = std::chrono::steady_clock::now();
  f();
  sync();
  const double one = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int iters = std::max(5, static_cast<int>(200.0 / std::max(one, 1e-3)));
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  sync();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

// The same call CudaDevice makes (row-major via swapped operands), on the same stream and buffers.
struct DirectCublas {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  DirectCublas() {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&handle), "cublasCreate");
    check(cublasSetStream(handle, stream), "cublasSetStream");
  }
  ~DirectCublas() {
    cublasDestroy(handle);
    cudaStreamDestroy(stream);
  }
  void gemm(DType dt, const GemmShape& s, const void* a, const void* b, void* c) const {
    const cudaDataType_t t = dt == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const float alpha = 1, beta = 0;
    const auto n = static_cast<int>(s.n), m = static_cast<int>(s.m), k = static_cast<int>(s.k);
    const int ldb = s.tb == Trans::N ? n : k;
    check(cublasGemmStridedBatchedEx(handle, s.tb == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, n, m,
                                     k, &alpha, b, t, ldb, s.k * s.n, a, t, k, s.m * s.k, &beta, c, t, n,
                                     s.m * s.n, static_cast<int>(s.batch), CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  }
};

spsim::rt::Shape shape_of(std::int64_t batch, std::int64_t r, std::int64_t c) {
  return batch == 1 ? spsim::rt::Shape{r, c} : spsim::rt::Shape{batch, r, c};
}

bool run(DType dt, const GemmShape& s, const DirectCublas& direct) {
  CudaDevice dev(dt, 0);
  Tensor a = dev.empty(shape_of(s.batch, s.m, s.k));
  Tensor b =
      s.tb == Trans::N ? dev.empty(shape_of(s.batch, s.k, s.n)) : dev.empty(shape_of(s.batch, s.n, s.k));
  Tensor c = dev.empty(shape_of(s.batch, s.m, s.n));
  dev.fill(a, 0.5);
  dev.fill(b, 0.25);
  dev.synchronize();
  const double flops = 2.0 * static_cast<double>(s.batch * s.m * s.n * s.k);
  const double ms_dev = time_ms([&] { dev.gemm(a, b, c, Trans::N, s.tb); }, [&] { dev.synchronize(); });
  const double ms_direct =
      time_ms([&] { direct.gemm(dt, s, a.storage()->data(), b.storage()->data(), c.storage()->data()); },
              [&] { check(cudaStreamSynchronize(direct.stream), "sync"); });
  const double tf_dev = flops / ms_dev * 1e-9, tf_direct = flops / ms_direct * 1e-9,
               ratio = tf_dev / tf_direct;
  std::printf("%-24s %-6s %5lld %6lld %6lld %6lld %10.1f %10.1f %7.2f%s\n", s.what,
              std::string(spsim::rt::dtype_name(dt)).c_str(), static_cast<long long>(s.batch),
              static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k), tf_dev,
              tf_direct, ratio, ratio < 0.7 ? "  BELOW 0.70" : "");
  return ratio >= 0.7;
}

}  // namespace

int main() {
  if (spsim::rt::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA GPU is visible\n");
    return 77;
  }
  std::printf("GPU 0: %s\n", spsim::rt::cuda_device_name(0).c_str());
  const std::vector<GemmShape> shapes{
      {"square", 1, 8192, 8192, 8192, Trans::N},
      {"linear x wT", 1, 16384, 4096, 1024, Trans::T},
      {"scores q kT (64 heads)", 64, 2048, 2048, 128, Trans::T},
      {"p v (64 heads)", 64, 2048, 128, 2048, Trans::N},
  };
  std::printf("%-24s %-6s %5s %6s %6s %6s %10s %10s %7s\n", "shape", "dtype", "batch", "m", "n", "k",
              "spsim TF/s", "cuBLAS TF/s", "ratio");
  bool ok = true;
  try {
    DirectCublas direct;
    for (DType dt : {DType::bf16, DType::f32})
      for (const auto& s : shapes) ok = run(dt, s, direct) && ok;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_gemm: %s\n", e.what());
    return 2;
  }
  return ok ? 0 : 1;
}

#else
int main() {
  std::printf("SKIPPED: spsim was built without the CUDA backend\n");
  return 77;
}
#endif
