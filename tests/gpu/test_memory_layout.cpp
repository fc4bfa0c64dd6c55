// CudaDevice memory, transfers, elementwise and layout ops, phase timing, against direct index formulas.
#ifdef SPSIM_WITH_CUDA
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <numeric>

#include "runtime/cuda/cuda_device.hpp"
#include "tests/gpu/fixture.hpp"
#include "tests/gpu/reference.hpp"

namespace spsim::gpu_test {
namespace {

Vec iota(std::size_t n) {
  Vec v(n);
  std::iota(v.begin(), v.end(), 0.0);
  return v;
}

TEST_CASE("from_host/to_host round-trip, fill, zeros, copy") {
  for (const auto& dc : exact_dtypes()) {
    CAPTURE(rt::dtype_name(dc.dtype));
    rt::CudaDevice dev(dc.dtype, 0);
    const Vec x = random_vec(37, 5);
    rt::Tensor t = dev.from_host(x, {37});
    CHECK(rt::is_cuda_tensor(t));
    CHECK(t.dtype() == dc.dtype);
    check_close(dev.to_host(t), x, dc.tol);
    rt::Tensor z = dev.zeros({3, 4});
    check_close(dev.to_host(z), Vec(12, 0.0), 0);
    dev.fill(z, 2.5);
    check_close(dev.to_host(z), Vec(12, 2.5), 0);
    rt::Tensor c = dev.empty({37});
    dev.copy(t, c);
    check_close(dev.to_host(c), x, dc.tol);
    CHECK_THROWS_AS(dev.copy(t, z), rt::RuntimeError);
    CHECK_THROWS_AS((void)dev.from_host(x, {36}), rt::RuntimeError);
  }
}

TEST_CASE("bf16 and fp16 round values to their precision") {
  // 1 + 2^-8 is not representable in bf16 (7 stored mantissa bits; rounds to even: 1) but is in fp16
  // (10 bits); 3.0 is exact in both.
  const Vec x{3.0, 1.0 + 1.0 / 256};
  rt::CudaDevice bf(rt::DType::bf16, 0), hf(rt::DType::f16, 0);
  check_close(bf.to_host(bf.from_host(x, {2})), {3.0, 1.0}, 0);
  check_close(hf.to_host(hf.from_host(x, {2})), x, 0);
}

TEST_CASE("upload_bytes/download_bytes move the raw representation") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  const std::array<float, 3> src{1.5F, -2.0F, 0.25F};
  rt::Tensor t = dev.empty({3});
  dev.upload_bytes(std::as_bytes(std::span(src)), t);
  check_close(dev.to_host(t), {1.5, -2.0, 0.25}, 0);
  std::array<float, 3> back{};
  dev.download_bytes(t, std::as_writable_bytes(std::span(back)));
  CHECK(std::memcmp(back.data(), src.data(), sizeof src) == 0);
}

TEST_CASE("add and scale") {
  for (const auto& dc : exact_dtypes()) {
    CAPTURE(rt::dtype_name(dc.dtype));
    rt::CudaDevice dev(dc.dtype, 0);
    const Vec a = random_vec(50, 1), b = random_vec(50, 2);
    rt::Tensor ta = dev.from_host(a, {5, 10}), tb = dev.from_host(b, {5, 10}), out = dev.empty({5, 10});
    dev.add(ta, tb, out, 2.0, -0.5);
    Vec want(50);
    for (std::size_t i = 0; i < 50; ++i) want[i] = 2.0 * a[i] - 0.5 * b[i];
    check_close(dev.to_host(out), want, dc.tol);
    dev.add(ta, tb, ta);  // in place, default alpha = beta = 1
    for (std::size_t i = 0; i < 50; ++i) want[i] = a[i] + b[i];
    check_close(dev.to_host(ta), want, dc.tol);
    dev.scale(ta, -3.0);
    for (auto& w : want) w *= -3.0;
    check_close(dev.to_host(ta), want, dc.tol);
  }
}

TEST_CASE("slice, slice_assign and concat along every dim of a 3-D tensor") {
  rt::CudaDevice dev(rt::DType::f64, 0);
  const I64 d0 = 2, d1 = 5, d2 = 3;
  const Vec x = iota(static_cast<std::size_t>(d0 * d1 * d2));  // x[i, j, k] = (i d1 + j) d2 + k
  rt::Tensor t = dev.from_host(x, {d0, d1, d2});
  const std::array<I64, 3> dims{d0, d1, d2};
  for (int dim = 0; dim < 3; ++dim) {
    CAPTURE(dim);
    const I64 n = dims[static_cast<std::size_t>(dim)];
    const I64 start = n > 2 ? 1 : 0, len = n - 2 * start;  // an interior block where there is one
    rt::Tensor s = dev.slice(t, dim, start, len);
    Vec want;
    for (I64 i = 0; i < d0; ++i)
      for (I64 j = 0; j < d1; ++j)
        for (I64 k = 0; k < d2; ++k) {
          const std::array<I64, 3> c{i, j, k};
          const I64 cd = c[static_cast<std::size_t>(dim)];
          if (cd >= start && cd < start + len) want.push_back(static_cast<double>((i * d1 + j) * d2 + k));
        }
    check_close(dev.to_host(s), want, 0);
    // Writing the slice back into zeros, then adding it once more, gives 2x inside the slice, 0 outside.
    rt::Tensor back = dev.zeros(t.shape());
    dev.slice_assign(back, dim, start, s);
    dev.slice_assign(back, dim, start, s, /*accumulate=*/true);
    const Vec got = dev.to_host(back);
    for (I64 i = 0; i < d0; ++i)
      for (I64 j = 0; j < d1; ++j)
        for (I64 k = 0; k < d2; ++k) {
          const std::array<I64, 3> c{i, j, k};
          const I64 cd = c[static_cast<std::size_t>(dim)];
          const auto idx = static_cast<std::size_t>((i * d1 + j) * d2 + k);
          CHECK(got[idx] == (cd >= start && cd < start + len ? 2 * x[idx] : 0.0));
        }
    // Concatenating the pieces [0, 1), [1, n) rebuilds the tensor.
    const std::array<rt::Tensor, 2> parts{dev.slice(t, dim, 0, 1), dev.slice(t, dim, 1, n - 1)};
    check_close(dev.to_host(dev.concat(parts, dim)), x, 0);
  }
  CHECK_THROWS_AS((void)dev.slice(t, 1, 3, 3), rt::RuntimeError);
  CHECK_THROWS_AS((void)dev.slice(t, 3, 0, 1), rt::RuntimeError);
}

TEST_CASE("permute of a 4-D tensor moves x[i0,i1,i2,i3] to out[i_p0, i_p1, i_p2, i_p3]") {
  for (rt::DType dt : {rt::DType::f64, rt::DType::f32, rt::DType::bf16}) {
    CAPTURE(rt::dtype_name(dt));
    rt::CudaDevice dev(dt, 0);
    const std::array<I64, 4> d{2, 3, 4, 5};
    const Vec x = iota(120);  // integers < 256: exact in bf16
    rt::Tensor t = dev.from_host(x, {2, 3, 4, 5});
    for (const std::array<int, 4>& p :
         {std::array{0, 2, 1, 3}, std::array{3, 1, 0, 2}, std::array{0, 1, 2, 3}}) {
      CAPTURE(p[0]);
      CAPTURE(p[1]);
      CAPTURE(p[2]);
      CAPTURE(p[3]);
      rt::Tensor out = dev.permute(t, p);
      const rt::Shape want_shape{d[static_cast<std::size_t>(p[0])], d[static_cast<std::size_t>(p[1])],
                                 d[static_cast<std::size_t>(p[2])], d[static_cast<std::size_t>(p[3])]};
      CHECK(out.shape() == want_shape);
      Vec want(120);
      std::array<I64, 4> i{};
      for (i[0] = 0; i[0] < 2; ++i[0])
        for (i[1] = 0; i[1] < 3; ++i[1])
          for (i[2] = 0; i[2] < 4; ++i[2])
            for (i[3] = 0; i[3] < 5; ++i[3]) {
              I64 o = 0;
              for (int k = 0; k < 4; ++k)
                o = o * want_shape[static_cast<std::size_t>(k)] +
                    i[static_cast<std::size_t>(p[static_cast<std::size_t>(k)])];
              want[static_cast<std::size_t>(o)] =
                  x[static_cast<std::size_t>(((i[0] * 3 + i[1]) * 4 + i[2]) * 5 + i[3])];
            }
      check_close(dev.to_host(out), want, 0);
    }
    const std::array<int, 4> bad{0, 0, 1, 2};
    CHECK_THROWS_AS((void)dev.permute(t, bad), rt::RuntimeError);
  }
}

TEST_CASE("phase and op-class timing count completed intervals") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  rt::Tensor a = dev.zeros({64, 64}), c = dev.zeros({64, 64});
  dev.set_op_timing(true);
  {
    rt::PhaseScope fwd(dev, "forward");
    dev.gemm(a, a, c, rt::Trans::N, rt::Trans::N);
    dev.gemm(a, a, c, rt::Trans::N, rt::Trans::N);
  }
  dev.end_phase("never-begun");  // ignored, must not throw
  const auto phases = dev.phase_times();
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].name == "forward");
  CHECK(phases[0].count == 1);
  CHECK(phases[0].milliseconds >= 0.0);
  const auto ops = dev.op_class_times();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].name == "gemm");
  CHECK(ops[0].count == 2);
  dev.reset_times();
  CHECK(dev.phase_times().empty());
}

TEST_CASE("memory stats follow tensor lifetimes through the cache") {
  rt::CudaDevice dev(rt::DType::f32, 0);
  const auto before = dev.memory_stats();
  {
    rt::Tensor t = dev.empty({1 << 20});  // 4 MiB
    const auto during = dev.memory_stats();
    CHECK(during.in_use_bytes >= before.in_use_bytes + (std::size_t{4} << 20));
    CHECK(during.peak_in_use_bytes >= during.in_use_bytes);
  }
  const auto after = dev.memory_stats();
  CHECK(after.in_use_bytes == before.in_use_bytes);
  CHECK(after.reserved_bytes >= before.reserved_bytes + (std::size_t{4} << 20));  // kept for reuse
  rt::Tensor again = dev.empty({1 << 20});
  CHECK(dev.memory_stats().reserved_bytes == after.reserved_bytes);  // served from the cache
}

}  // namespace
}  // namespace spsim::gpu_test
#endif
