// CudaDevice::gemm against the naive loop reference: transposes, alpha/beta, batch broadcasting and
// the summed smaller output batch (GQA), in fp64, fp32 and bf16.
#ifdef SPSIM_WITH_CUDA
#include <doctest/doctest.h>

#include "runtime/cuda/cuda_device.hpp"
#include "tests/gpu/fixture.hpp"
#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

rt::Shape shape3(I64 b, I64 r, I64 c) {
  return b == 1 ? rt::Shape{r, c} : rt::Shape{b, r, c};
}

void run_gemm(rt::CudaDevice& dev, const GemmCase& g, double alpha, double beta, double tol,
              std::uint64_t seed) {
  const I64 m = g.ta ? g.ca : g.ra, n = g.tb ? g.rb : g.cb;
  const Vec a = random_vec(static_cast<std::size_t>(g.ba * g.ra * g.ca), seed);
  const Vec b = random_vec(static_cast<std::size_t>(g.bb * g.rb * g.cb), seed + 1);
  const Vec c0 = random_vec(static_cast<std::size_t>(g.bc * m * n), seed + 2);
  rt::Tensor ta = dev.from_host(a, shape3(g.ba, g.ra, g.ca));
  rt::Tensor tb = dev.from_host(b, shape3(g.bb, g.rb, g.cb));
  rt::Tensor tc = dev.from_host(c0, shape3(g.bc, m, n));
  dev.gemm(ta, tb, tc, g.ta ? rt::Trans::T : rt::Trans::N, g.tb ? rt::Trans::T : rt::Trans::N, alpha, beta);
  check_close(dev.to_host(tc), gemm_ref(g, a, b, c0, alpha, beta), tol);
}

// {ba, ra, ca, bb, rb, cb, bc, ta, tb}: m = 5, k = 7, n = 3 per batch.
const std::vector<GemmCase>& cases() {
  static const std::vector<GemmCase> c{
      {1, 5, 7, 1, 7, 3, 1, false, false},  // plain 2-D
      {1, 7, 5, 1, 7, 3, 1, true, false},   // op(a) = aᵀ
      {1, 5, 7, 1, 3, 7, 1, false, true},   // op(b) = bᵀ (q kᵀ)
      {1, 7, 5, 1, 3, 7, 1, true, true},
      {3, 5, 7, 3, 7, 3, 3, false, false},  // equal batches: strided batched
      {6, 5, 7, 2, 3, 7, 6, false, true},   // b shared by groups of 3 (GQA q kᵀ): pointer arrays
      {2, 5, 7, 6, 7, 3, 6, false, false},  // a shared by groups of 3
      {1, 5, 7, 4, 7, 3, 4, false, false},  // a shared by all: stride 0
      {6, 7, 5, 6, 7, 3, 2, true, false},   // c receives the sum over groups of 3 (GQA dK)
      {6, 7, 5, 2, 7, 3, 2, true, false},   // a full, b and c per group
  };
  return c;
}

TEST_CASE("gemm matches the loop reference for transposes, broadcasting and summed outputs") {
  for (const auto& dc : exact_dtypes()) {
    rt::CudaDevice dev(dc.dtype, 0);
    std::uint64_t seed = 10;
    for (const auto& g : cases())
      for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, 0.25}}) {
        CAPTURE(rt::dtype_name(dc.dtype));
        CAPTURE(g.ba);
        CAPTURE(g.bb);
        CAPTURE(g.bc);
        CAPTURE(g.ta);
        CAPTURE(g.tb);
        CAPTURE(beta);
        run_gemm(dev, g, alpha, beta, dc.tol, seed += 3);
      }
  }
}

TEST_CASE("gemm in bf16 accumulates in fp32") {
  // Inputs and output are rounded to bf16 (8 significant bits, relative error ≤ 2^-9 each); the sum
  // over k = 7 terms in fp32 adds nothing comparable, so a few 2^-9 of relative error remain.
  rt::CudaDevice dev(rt::DType::bf16, 0);
  run_gemm(dev, {3, 5, 7, 3, 3, 7, 3, false, true}, 1.0, 0.0, 2e-2, 99);
  run_gemm(dev, {6, 7, 5, 6, 7, 3, 2, true, false}, 0.5, 0.5, 2e-2, 199);
}

TEST_CASE("gemm with an empty inner dimension scales c by beta") {
  rt::CudaDevice dev(rt::DType::f64, 0);
  const Vec c0{1, 2, 3, 4, 5, 6};
  rt::Tensor a = dev.empty({2, 0}), b = dev.empty({0, 3});
  rt::Tensor c = dev.from_host(c0, {2, 3});
  dev.gemm(a, b, c, rt::Trans::N, rt::Trans::N, 1.0, 0.5);
  check_close(dev.to_host(c), {0.5, 1, 1.5, 2, 2.5, 3}, 0);  // 0.5 × c0, exact in binary
}

TEST_CASE("gemm rejects mismatched shapes") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  rt::Tensor a = dev.zeros({2, 3}), b = dev.zeros({4, 5}), c = dev.zeros({2, 5});
  CHECK_THROWS_AS(dev.gemm(a, b, c, rt::Trans::N, rt::Trans::N), rt::RuntimeError);
  rt::Tensor b2 = dev.zeros({3, 5}), c2 = dev.zeros({2, 4});
  CHECK_THROWS_AS(dev.gemm(a, b2, c2, rt::Trans::N, rt::Trans::N), rt::RuntimeError);
}

}  // namespace
}  // namespace spsim::gpu_test
#endif
