// The compute model: roofline times of hand-made ops and the fused-attention calibration.
#include <doctest/doctest.h>

#include <numeric>

#include "analysis/config/hardware.hpp"
#include "runtime/core/error.hpp"
#include "runtime/cost.hpp"
#include "tests/sim/replay_helpers.hpp"

using namespace replay_test;

namespace {

tr::ComputeOp as_op(const rt::OpCost& c) {
  tr::ComputeOp op;
  op.op_class = c.op_class;
  op.flops = c.flops;
  op.bytes_read = c.bytes_read;
  op.bytes_written = c.bytes_written;
  static tr::ShapeTable table;  // keeps the ops' shapes alive
  op.detail = table.intern(tr::OpShapes{{}, c.kernels});
  return op;
}

}  // namespace

TEST_CASE("compute time is the larger roof plus launch overhead") {
  GpuSpec g = test_gpu(1e14, 2e12);  // GEMM 1e14 FLOP/s, HBM 2e12 × 0.5 = 1e12 B/s effective
  g.launch_overhead = Time::from_us(3);
  const ComputeModel m(g, rt::DType::bf16);
  tr::ComputeOp op;
  op.op_class = rt::OpClass::gemm;
  op.flops = 2e9;       // 2e9 / 1e14 = 20 µs
  op.bytes_read = 1e6;  // 1e6 / 1e12 = 1 µs: compute bound
  CHECK(m.duration(op) == Time::from_us(20 + 3));
  op.bytes_read = 50e6;  // 50 µs: memory bound
  CHECK(m.duration(op) == Time::from_us(50 + 3));
  op.skipped = true;  // never launched: no launch overhead either
  CHECK(m.duration(op) == Time{});
}

TEST_CASE("a linear backward with a bias adds the bias gradient's reduction kernel: dy read again") {
  // x [1000, 500], w [250, 500], bf16 (the test GPU's GEMMs have no kernel model: a roofline). dx and
  // dw are 2 × 2·1000·500·250 FLOPs plus 250·500 adds = 5.00125e8 → 5.00125 µs at 1e14; their bytes
  // (x, w twice, dy read; dx, dw written: 2·(5e5 + 2·1.25e5 + 2.5e5) + 2·(5e5 + 1.25e5) = 3.25e6 B →
  // 3.25 µs at 1e12) leave it compute bound; two launches. A bias adds 1000·250 adds (2.5e-3 µs) and a
  // kernel reading dy (5e5 B) and writing db (500 B) at the copy rate, 0.5005 µs, plus one more launch.
  GpuSpec g = test_gpu(1e14, 2e12);
  g.launch_overhead = Time::from_us(3);
  const ComputeModel m(g, rt::DType::bf16);
  const auto without = m.duration(as_op(rt::cost::linear_backward({1000, 500}, {250, 500}, true, false, false,
                                                                   rt::DType::bf16)));
  const auto with = m.duration(as_op(rt::cost::linear_backward({1000, 500}, {250, 500}, true, true, false,
                                                                rt::DType::bf16)));
  CHECK(without.us() == doctest::Approx(5.00125 + 2 * 3));
  CHECK((with - without).us() == doctest::Approx(2.5e-3 + 0.5005 + 3));
}

TEST_CASE("linear backward into an fp32 main gradient: the dW GEMM reads and writes 4-byte elements") {
  // x [1000, 500], w [250, 500], bf16. dW's GEMM is [250, 500] over k = 1000 rows; with fp32_dw its
  // epilogue moves 8 bytes per element (c_bytes; read and written), and the op reads and writes dw as
  // 4-byte elements: 2 × 250·500·(4 − 2) bytes more. The dX GEMM and the FLOPs do not change.
  const auto plain = rt::cost::linear_backward({1000, 500}, {250, 500}, true, false, false, rt::DType::bf16);
  const auto fused =
      rt::cost::linear_backward({1000, 500}, {250, 500}, true, false, false, rt::DType::bf16, /*fp32_dw=*/true);
  REQUIRE(fused.kernels.gemms.size() == 2);
  const rt::GemmShape& dw = *fused.kernels.gemms.begin();
  CHECK(dw.m == 250);
  CHECK(dw.n == 500);
  CHECK(dw.k == 1000);
  CHECK(dw.c_bytes == 8);
  CHECK((fused.kernels.gemms.begin() + 1)->c_bytes == 0);
  CHECK(plain.kernels.gemms.begin()->c_bytes == 0);
  CHECK(fused.bytes_read - plain.bytes_read == 250u * 500u * 2u);
  CHECK(fused.bytes_written - plain.bytes_written == 250u * 500u * 2u);
  CHECK(fused.flops == plain.flops);
}

TEST_CASE("a dtype the GPU lists no peak for is an input error") {
  const GpuSpec a100 = spsim::analysis::load_gpu("a100-sxm4-80gb", "test");  // bf16, fp16, tf32, fp32 only
  CHECK_THROWS_AS(ComputeModel(a100, rt::DType::f64), InputError);
  CHECK_NOTHROW(ComputeModel(a100, rt::DType::f32));
}

// flash-attention at the Llama-3.1-8B attention shape (32 query heads, 8 KV heads, head dim 128), bf16,
// causal, batch 1, 8192 tokens (shared/data/hardware-and-measurements.md): iterations per second of
// the forward and of forward+backward, FlashAttention-2 kernels (`spsim validate` holds the same rows).
// The kernel model's prediction must be within 10% of both.
TEST_CASE("the FlashAttention-2 kernel model reproduces the flash-attention measurements within 10%") {
  struct Row {
    const char* gpu;
    double fwd_its, fwd_bwd_its;
  };
  // H800 has the H100 SXM's SMs and clocks (only NVLink differs), so it calibrates the H100 spec.
  const Row rows[] = {{"a100-sxm4-80gb", 373.4, 94.7}, {"h100-sxm5-80gb", 591.5, 154.7}};
  const std::int64_t s = 8192, d = 128;
  const rt::Positions pos = rt::Positions::range(0, s);
  const rt::Mask causal{true, &pos, &pos};
  const rt::Shape q{32, s, d}, kv{8, s, d};
  const auto fwd = as_op(rt::cost::attention_forward(q, kv, kv, rt::DType::bf16, causal));
  const auto bwd = as_op(rt::cost::attention_backward(q, kv, kv, rt::DType::bf16, causal));
  // FLOPs: forward 4·s²·d·H·(s+1)/(2s) = 4·8192²·128·32·8193/16384 (causal keeps (s+1)/2s of the square).
  CHECK(fwd.flops == doctest::Approx(4.0 * s * s * d * 32 * (s + 1) / (2.0 * s)).epsilon(1e-12));
  CHECK(bwd.flops == doctest::Approx(2.5 * fwd.flops).epsilon(1e-12));
  for (const Row& r : rows) {
    CAPTURE(r.gpu);
    const ComputeModel m(spsim::analysis::load_gpu(r.gpu, "test"), rt::DType::bf16, "test", "fa2");
    const double t_fwd = m.duration(fwd).seconds(), t_bwd = m.duration(bwd).seconds();
    CHECK(1.0 / t_fwd == doctest::Approx(r.fwd_its).epsilon(0.10));
    CHECK(1.0 / (t_fwd + t_bwd) == doctest::Approx(r.fwd_bwd_its).epsilon(0.10));
  }
}
