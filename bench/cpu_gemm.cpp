// Benchmark: Eigen large-GEMM GFLOP/s on the CPU device, and attention block forward+backward GFLOP/s
// against it (the ring-attention gradient check needs attention at >= 0.5x of GEMM speed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "runtime/cpu/cpu_device.hpp"

namespace {

using spsim::rt::CpuDevice;
using spsim::rt::Mask;
using spsim::rt::Positions;
using spsim::rt::Shape;
using spsim::rt::Tensor;

Tensor random_tensor(CpuDevice& dev, const Shape& shape, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(spsim::rt::numel(shape)));
  for (auto& x : v) x = dist(gen);
  return dev.from_host(v, shape);
}

// Best wall time of `reps` runs, in seconds (best, not mean: the machine is shared).
double best_seconds(int reps, const std::function<void()>& run) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void report(const char* what, double flops, double seconds, double gemm_gflops) {
  if (flops == 0) {
    std::printf("%-48s %9.3f ms (no flops)\n", what, seconds * 1e3);
    return;
  }
  const double gflops = flops / seconds * 1e-9;
  std::printf("%-48s %9.3f ms %8.2f GFLOP/s", what, seconds * 1e3, gflops);
  if (gemm_gflops > 0) std::printf("  %.2fx GEMM", gflops / gemm_gflops);
  std::printf("\n");
}

}  // namespace

int main() {
  CpuDevice dev(spsim::rt::DType::f64);
  const int reps = 3;

  // ---- large GEMM: C = A B with n = 1024, float64; 2 n³ flops (one multiply and one add per term).
  const std::int64_t n = 1024;
  Tensor a = random_tensor(dev, {n, n}, 1), b = random_tensor(dev, {n, n}, 2), c = dev.empty({n, n});
  const double gemm_flops = 2.0 * n * n * n;
  const double gemm_s =
      best_seconds(reps, [&] { dev.gemm(a, b, c, spsim::rt::Trans::N, spsim::rt::Trans::N); });
  const double gemm_gflops = gemm_flops / gemm_s * 1e-9;
  std::printf("cpu device, float64, single thread per call\n");
  report("gemm 1024x1024x1024", gemm_flops, gemm_s, 0);

  // ---- attention block, batch 16, sq = sk = 512, d = 64, float64. Counted flops are the GEMMs only
  // (exp and elementwise work is not counted): forward S = q kᵀ and o = p v, 2 sq sk d each → 4 sq sk d;
  // backward recomputes S, then dP = dO vᵀ, dq = dS k, dk = dSᵀ q, dv = pᵀ dO → 5 · 2 sq sk d = 10 sq sk d.
  const std::int64_t batch = 16, s = 512, d = 64;
  const double per_gemm = 2.0 * batch * s * s * d;
  const double fwd_flops = 2 * per_gemm, bwd_flops = 5 * per_gemm;
  Tensor q = random_tensor(dev, {batch, s, d}, 3), k = random_tensor(dev, {batch, s, d}, 4);
  Tensor v = random_tensor(dev, {batch, s, d}, 5), d_o = random_tensor(dev, {batch, s, d}, 6);
  Tensor o = dev.empty({batch, s, d}), lse = dev.empty({batch, s});
  Tensor dq = dev.zeros({batch, s, d}), dk = dev.zeros({batch, s, d}), dv = dev.zeros({batch, s, d});
  const double scale = 0.125;  // 1/sqrt(64)

  const Positions pos = Positions::range(0, s), later = Positions::range(s, s);
  struct Case {
    const char* name;
    Mask mask;
  };
  const Case cases[] = {
      {"unmasked block", Mask{}},
      {"causal diagonal block (mask applied)", Mask{true, &pos, &pos}},
      {"causal block entirely in the future (skipped)", Mask{true, &pos, &later}},
  };
  for (const Case& cs : cases) {
    std::printf("attention 16 x 512 x 512 x 64, %s\n", cs.name);
    const double f =
        best_seconds(reps, [&] { dev.attention_block_forward(q, k, v, o, lse, scale, cs.mask); });
    const double bw = best_seconds(
        reps, [&] { dev.attention_block_backward(q, k, v, o, d_o, lse, dq, dk, dv, scale, cs.mask); });
    const double work = cs.mask.unmasked_fraction() > 0 ? 1.0 : 0.0;  // a skipped block does no flops
    report("  forward  (4 sq sk d flops per batch)", work * fwd_flops, f, gemm_gflops);
    report("  backward (10 sq sk d flops per batch)", work * bwd_flops, bw, gemm_gflops);
    report("  forward + backward", work * (fwd_flops + bwd_flops), f + bw, gemm_gflops);
  }
  return 0;
}
