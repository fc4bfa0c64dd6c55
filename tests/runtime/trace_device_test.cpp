// TraceDevice: validation, recorded costs, allocation/free pairing and phases.
#include "runtime/trace/trace_device.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>

using namespace spsim::rt;
using namespace spsim::rt::trace;

namespace {

template <class T>
std::vector<T> all_of_kind(const std::vector<Record>& records) {
  std::vector<T> out;
  for (const Record& r : records)
    if (const auto* x = std::get_if<T>(&r)) out.push_back(*x);
  return out;
}

Positions positions(std::int64_t first, std::int64_t n) {
  return Positions::range(first, n);
}

}  // namespace

TEST_CASE("a gemm records its closed-form cost; a bad gemm throws and records nothing") {
  Recorder rec(0, DType::bf16);
  TraceDevice device(DType::bf16, rec);
  Device& dev = device;
  Tensor a = dev.empty({2, 8, 4}), b = dev.empty({2, 4, 16}), c = dev.empty({2, 8, 16});
  dev.gemm(a, b, c, Trans::N, Trans::N);
  auto ops = all_of_kind<ComputeOp>(rec.records());
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].name == "gemm");
  CHECK(ops[0].op_class == OpClass::gemm);
  CHECK(ops[0].flops == doctest::Approx(2.0 * 8 * 16 * 4 * 2));
  CHECK(ops[0].bytes_read == (2 * 8 * 4 + 2 * 4 * 16) * 2);
  CHECK(ops[0].bytes_written == 2 * 8 * 16 * 2);
  CHECK(ops[0].shapes() == std::vector<Shape>{{2, 8, 4}, {2, 4, 16}, {2, 8, 16}});
  CHECK(ComputeOp::stream == Stream::compute);

  const std::size_t before = rec.records().size();
  CHECK_THROWS_AS(dev.gemm(a, c, c, Trans::N, Trans::N), RuntimeError);  // inner 4 vs 8
  CHECK_THROWS_AS(dev.gemm(a, b, c, Trans::T, Trans::N), RuntimeError);  // aᵀ is [4, 8]
  Tensor undefined;
  CHECK_THROWS_AS(dev.gemm(a, b, undefined, Trans::N, Trans::N), RuntimeError);
  CHECK(rec.records().size() == before);

  SUBCASE("a tensor of another dtype is rejected as a real backend would") {
    TraceDevice f32(DType::f32, rec);
    Tensor x = f32.empty({2, 8, 4});
    CHECK_THROWS_AS(dev.gemm(x, b, c, Trans::N, Trans::N), RuntimeError);
  }
}

TEST_CASE("attention blocks: causal fraction, and a fully masked block is recorded as skipped") {
  Recorder rec(0, DType::f16);
  TraceDevice dev(DType::f16, rec);
  constexpr std::int64_t n = 6, d = 4, bq = 4, bk = 2;
  Tensor q = dev.empty({bq, n, d}), k = dev.empty({bk, n, d}), v = dev.empty({bk, n, d});
  Tensor o = dev.empty({bq, n, d}), lse = dev.empty({bq, n});
  const auto diag = positions(0, n), later = positions(n, n);

  dev.attention_block_forward(q, k, v, o, lse, 0.5, Mask{true, &diag, &diag});
  dev.attention_block_forward(q, k, v, o, lse, 0.5, Mask{true, &diag, &later});  // keys after queries
  auto ops = all_of_kind<ComputeOp>(rec.records());
  REQUIRE(ops.size() == 2);
  // Diagonal block: n(n+1)/2 allowed pairs of n².
  CHECK(ops[0].flops == doctest::Approx(4.0 * n * n * d * bq * (n + 1) / (2.0 * n)));
  CHECK_FALSE(ops[0].skipped);
  CHECK(ops[1].skipped);
  CHECK(ops[1].flops == 0);
  CHECK(ops[1].bytes() == 0);

  Tensor dq = dev.zeros(q.shape()), dk = dev.zeros(k.shape()), dv = dev.zeros(v.shape());
  const std::size_t before = all_of_kind<ComputeOp>(rec.records()).size();
  dev.attention_block_backward(q, k, v, o, o, lse, dq, dk, dv, 0.5, Mask{});
  ops = all_of_kind<ComputeOp>(rec.records());
  CHECK(ops.back().name == "attention_block_backward");
  CHECK(ops.back().flops == doctest::Approx(10.0 * n * n * d * bq));
  CHECK(ops.size() == before + 1);
  // Into zeroed gradients the kernels write their own outputs: D, main, dQ conversion, and the two GQA
  // reductions (bq 4 > bk 2), no accumulation pass.
  const auto first = ops.back();
  CHECK(first.kernels().launches == 5);
  // A second block adds into what the first wrote: one pass per gradient, each reading the block's
  // f16 value and the fp32 sum and writing the sum: (2 + 4 + 4) bytes per element of dq, dk, dv.
  dev.attention_block_backward(q, k, v, o, o, lse, dq, dk, dv, 0.5, Mask{});
  ops = all_of_kind<ComputeOp>(rec.records());
  CHECK(ops.back().kernels().launches == 5 + 3);
  CHECK(ops.back().kernels().attention->aux_bytes - first.kernels().attention->aux_bytes ==
        10 * (bq * n * d + 2 * bk * n * d));
  // A fully masked block writes nothing: the next one still counts the gradients as accumulated, and
  // fresh zeros as fresh.
  Tensor dq2 = dev.zeros(q.shape());
  dev.attention_block_backward(q, k, v, o, o, lse, dq2, dk, dv, 0.5, Mask{true, &diag, &later});
  CHECK(all_of_kind<ComputeOp>(rec.records()).back().skipped);
  dev.attention_block_backward(q, k, v, o, o, lse, dq2, dk, dv, 0.5, Mask{});
  CHECK(all_of_kind<ComputeOp>(rec.records()).back().kernels().launches == 5 + 2);  // dk, dv only

  // dk must have k's (smaller, GQA) batch; lse must be [bq, n]; the mask must cover the block.
  CHECK_THROWS_AS(dev.attention_block_backward(q, k, v, o, o, lse, dq, dq, dv, 0.5, Mask{}), RuntimeError);
  CHECK_THROWS_AS(dev.attention_block_forward(q, k, v, o, o, 0.5, Mask{}), RuntimeError);
  // The shapes compared in place are named in full: lse is q's less its last dimension, o is q's with
  // v's last.
  CHECK_THROWS_WITH_AS(dev.attention_block_forward(q, k, v, o, o, 0.5, Mask{}),
                       "attention_block_forward: lse is [4, 6, 4], expected [4, 6]", RuntimeError);
  Tensor wide = dev.empty({bq, n, d + 1});
  CHECK_THROWS_WITH_AS(dev.attention_block_forward(q, k, v, wide, lse, 0.5, Mask{}),
                       "attention_block_forward: o is [4, 6, 5], expected [4, 6, 4]", RuntimeError);
  const auto short_pos = positions(0, n - 1);
  CHECK_THROWS_AS(dev.attention_block_forward(q, k, v, o, lse, 0.5, Mask{true, &short_pos, &diag}),
                  RuntimeError);
  Tensor k3 = dev.empty({3, n, d});  // 4 query batches cannot share 3 kv batches
  CHECK_THROWS_AS(dev.attention_block_forward(q, k3, k3, o, lse, 0.5, Mask{}), RuntimeError);
}

TEST_CASE("allocations and frees pair up; peak bytes of a small sequence") {
  Recorder rec(0, DType::f32);
  {
    TraceDevice dev(DType::f32, rec);
    Tensor a = dev.empty({4, 4});  // 64 B, live 64
    Tensor b = dev.zeros({8});     // 32 B, live 96 (+ a fill op)
    {
      Tensor s = dev.slice(a, 0, 1, 2);                   // [2, 4] = 32 B, live 128
      Tensor r = s.reshape({8});                          // same storage: no allocation
      Tensor p = dev.permute(a, std::vector<int>{1, 0});  // [4, 4] = 64 B, live 192 (peak)
      CHECK(p.shape() == Shape{4, 4});
      CHECK(r.storage() == s.storage());
    }  // s/r and p freed: live 96
    const std::vector<Tensor> parts{b, b};
    Tensor c = dev.concat(parts, 0);  // [16] = 64 B, live 160
    CHECK(c.shape() == Shape{16});
  }  // everything freed: live 0
  const RankTrace t = rec.take();
  // 64 + 32 + 32 + 64 = 192 at the peak (both inner tensors alive with a and b).
  CHECK(peak_live_bytes(t) == 192);

  const auto allocs = all_of_kind<Alloc>(t.records);
  const auto frees = all_of_kind<Free>(t.records);
  REQUIRE(allocs.size() == 5);
  REQUIRE(frees.size() == 5);
  std::map<std::uint64_t, std::uint64_t> alloc_bytes;
  for (const Alloc& a : allocs) alloc_bytes[a.storage] = a.bytes;
  CHECK(alloc_bytes.size() == 5);  // distinct storage ids
  for (const Free& f : frees) {
    REQUIRE(alloc_bytes.count(f.storage) == 1);
    CHECK(alloc_bytes[f.storage] == f.bytes);
  }
  // The two inner tensors die before the concat's output (the last allocation) is made.
  std::size_t last_alloc = 0;
  for (std::size_t i = 0; i < t.records.size(); ++i)
    if (std::holds_alternative<Alloc>(t.records[i])) last_alloc = i;
  CHECK(std::count_if(t.records.begin(), t.records.begin() + static_cast<std::ptrdiff_t>(last_alloc),
                      [](const Record& r) { return std::holds_alternative<Free>(r); }) == 2);
  // Layout ops are copies that allocate their output.
  const auto ops = all_of_kind<ComputeOp>(t.records);
  REQUIRE(ops.size() == 4);
  CHECK(ops[0].name == "fill");
  CHECK(ops[1].name == "slice");
  CHECK(ops[1].op_class == OpClass::copy);
  CHECK(ops[1].bytes() == 2 * 32);
  CHECK(ops[2].name == "permute");
  CHECK(ops[3].name == "concat");
}

TEST_CASE("a tensor that outlives its TraceDevice still records its free") {
  Recorder rec(3, DType::bf16);
  Tensor kept;
  {
    TraceDevice dev(DType::bf16, rec);
    kept = dev.empty({5});
  }
  kept = Tensor();
  const RankTrace t = rec.take();
  CHECK(t.rank == 3);
  CHECK(all_of_kind<Free>(t.records).size() == 1);
  CHECK(peak_live_bytes(t) == 5 * 2);
}

TEST_CASE("layout ops validate their arguments") {
  Recorder rec(0, DType::f32);
  TraceDevice dev(DType::f32, rec);
  Tensor x = dev.empty({4, 6});
  CHECK_THROWS_AS((void)dev.slice(x, 1, 4, 3), RuntimeError);  // 4 + 3 > 6
  CHECK_THROWS_AS((void)dev.slice(x, 2, 0, 1), RuntimeError);  // no dim 2
  CHECK(dev.slice(x, -1, 4, 2).shape() == Shape{4, 2});
  CHECK_THROWS_AS((void)dev.permute(x, std::vector<int>{0, 0}), RuntimeError);
  const std::vector<Tensor> bad{x, dev.empty({3, 5})};
  CHECK_THROWS_AS((void)dev.concat(bad, 0), RuntimeError);  // 6 vs 5 columns
  Tensor part = dev.empty({4, 2});
  dev.slice_assign(x, 1, 4, part, true);
  CHECK_THROWS_AS(dev.slice_assign(x, 1, 5, part), RuntimeError);  // 5 + 2 > 6
  Tensor y = dev.empty({6, 4});
  CHECK_THROWS_AS(dev.add(x, y, x), RuntimeError);
  CHECK_THROWS_AS(dev.copy(x, part), RuntimeError);  // 24 vs 8 elements
  CHECK_THROWS_AS((void)dev.from_host(std::vector<double>(5, 1.0), {4, 6}), RuntimeError);
  Tensor h = dev.from_host({}, {2, 3});
  CHECK(dev.to_host(h) == std::vector<double>(6, 0.0));
  CHECK(h.storage()->data() == nullptr);
}

TEST_CASE("layer ops validate shapes and record gemm-class linears") {
  Recorder rec(0, DType::f32);
  TraceDevice dev(DType::f32, rec);
  Tensor x = dev.empty({10, 6}), w = dev.empty({4, 6}), b = dev.empty({4}), y = dev.empty({10, 4});
  dev.linear(x, w, b, y);
  Tensor dx = dev.empty({10, 6}), dw = dev.empty({4, 6}), none;
  dev.linear_backward(x, w, y, dx, dw, none);
  CHECK_THROWS_AS(dev.linear(x, w, b, dx), RuntimeError);  // y must be [10, 4]
  Tensor g = dev.empty({6}), beta = dev.empty({6}), mean = dev.empty({10}), rstd = dev.empty({10});
  dev.layer_norm(x, g, beta, 1e-5, dx, mean, rstd);
  CHECK_THROWS_AS(dev.layer_norm(x, g, beta, 1e-5, dx, g, rstd), RuntimeError);  // mean has 6, not 10
  dev.gelu(x, dx);
  CHECK_THROWS_AS(dev.gelu(x, y), RuntimeError);
  dev.swiglu(x, x, dx);
  CHECK_THROWS_AS(dev.swiglu(x, y, dx), RuntimeError);  // up must have x's shape
  Tensor d2 = dev.empty({10, 6});
  dev.swiglu_backward(x, x, dx, dx, d2);
  CHECK_THROWS_AS(dev.swiglu_backward(x, x, y, dx, d2), RuntimeError);
  const auto ops = all_of_kind<ComputeOp>(rec.records());
  REQUIRE(ops.size() == 6);
  CHECK(ops[4].name == "swiglu");
  CHECK(ops[5].name == "swiglu_backward");
  CHECK(ops[0].op_class == OpClass::gemm);
  CHECK(ops[0].flops == doctest::Approx(2.0 * 10 * 6 * 4 + 10 * 4));
  CHECK(ops[1].op_class == OpClass::gemm);
  CHECK(ops[1].shapes()[5] == Shape{});  // db undefined
  CHECK(ops[2].op_class == OpClass::elementwise);
  CHECK(ops[3].name == "gelu");
}

TEST_CASE("phases are recorded in order around the ops") {
  Recorder rec(0, DType::bf16);
  TraceDevice dev(DType::bf16, rec);
  Tensor x = dev.empty({4});
  {
    PhaseScope fwd(dev, "forward");
    dev.scale(x, 2.0);
  }
  dev.begin_phase("backward");
  dev.end_phase("backward");
  const auto& r = rec.records();
  REQUIRE(r.size() == 6);  // alloc, begin forward, scale, end forward, begin backward, end backward
  CHECK(std::holds_alternative<Alloc>(r[0]));
  CHECK(std::get<PhaseBegin>(r[1]).name == "forward");
  CHECK(std::get<ComputeOp>(r[2]).name == "scale");
  CHECK(std::get<PhaseEnd>(r[3]).name == "forward");
  CHECK(std::get<PhaseBegin>(r[4]).name == "backward");
  CHECK(std::get<PhaseEnd>(r[5]).name == "backward");
}

TEST_CASE("accumulators: f32 on a bf16 device, priced at their own width by fill, copy and add") {
  // The ring's fp32 dK/dV sums (Device::empty_accumulator): n = 24 elements, bf16 2 bytes, f32 4.
  Recorder rec(0, DType::bf16);
  TraceDevice device(DType::bf16, rec);
  Device& dev = device;
  const Shape s{2, 3, 4};
  Tensor acc = dev.empty_accumulator(s), blk = dev.empty(s), sum = dev.empty_accumulator(s);
  CHECK(acc.dtype() == DType::f32);
  CHECK(blk.dtype() == DType::bf16);
  const auto allocs = all_of_kind<Alloc>(rec.records());
  REQUIRE(allocs.size() == 3);
  CHECK(allocs[0].bytes == 24 * 4);
  CHECK(allocs[1].bytes == 24 * 2);
  dev.fill(acc, 0);
  dev.copy(blk, acc);  // bf16 → f32: reads 2, writes 4 bytes an element
  dev.add(blk, acc, sum);  // bf16 + f32 → f32
  dev.copy(sum, blk);  // back to the dtype
  const auto ops = all_of_kind<ComputeOp>(rec.records());
  REQUIRE(ops.size() == 4);
  CHECK(ops[0].bytes_written == 24 * 4);
  CHECK(ops[1].bytes_read == 24 * 2);
  CHECK(ops[1].bytes_written == 24 * 4);
  CHECK(ops[2].bytes_read == 24 * (2 + 4));
  CHECK(ops[2].bytes_written == 24 * 4);
  CHECK(ops[3].bytes_read == 24 * 4);
  CHECK(ops[3].bytes_written == 24 * 2);
  // Only the accumulator type passes beside the device's: an f64 tensor is still refused.
  TraceDevice f64(DType::f64, rec);
  Tensor wide = f64.empty(s);
  CHECK_THROWS_AS(dev.add(wide, acc, sum), RuntimeError);
  // On an f32 device the accumulator is f32 itself.
  TraceDevice f32(DType::f32, rec);
  CHECK(f32.empty_accumulator(s).dtype() == DType::f32);
}
