// Inputs, float64 references and comparison of the gradient check (shared by check and run --verify).
#include "analysis/check/check_data.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <future>
#include <mutex>
#include <span>
#include <thread>

#include "models/random.hpp"
#include "models/reference.hpp"
#include "strategies/layer.hpp"

namespace spsim::analysis {

namespace {
// Where local row r of batch i starts: [a, n, c] or, sequence first, [n, a, c].
std::int64_t local_row(std::int64_t i, std::int64_t r, std::int64_t a, std::int64_t n, bool sequence_first) {
  return sequence_first ? r * a + i : i * n + r;
}
}  // namespace

HostVec gather_rows(const HostVec& global, std::int64_t a, std::int64_t seq, std::int64_t c,
                    const std::vector<std::int64_t>& positions, bool sequence_first) {
  const auto n = static_cast<std::int64_t>(positions.size());
  HostVec out(static_cast<std::size_t>(a * n * c));
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t r = 0; r < n; ++r)
      std::copy_n(global.begin() + (i * seq + positions[static_cast<std::size_t>(r)]) * c, c,
                  out.begin() + local_row(i, r, a, n, sequence_first) * c);
  return out;
}

void scatter_rows(const HostVec& local, HostVec& global, std::int64_t a, std::int64_t seq, std::int64_t c,
                  const std::vector<std::int64_t>& positions, bool sequence_first) {
  const auto n = static_cast<std::int64_t>(positions.size());
  for (std::int64_t i = 0; i < a; ++i)
    for (std::int64_t r = 0; r < n; ++r)
      std::copy_n(local.begin() + local_row(i, r, a, n, sequence_first) * c, c,
                  global.begin() + (i * seq + positions[static_cast<std::size_t>(r)]) * c);
}

AttentionInputs attention_inputs(const models::AttnProblem& p, std::uint64_t seed) {
  const std::int64_t bh = p.batch * p.heads, bkv = p.batch * p.kv_heads, S = p.seq_len, d = p.head_dim;
  // Each tensor has its own generator stream, so drawing them on separate threads changes no value.
  auto draw = [&](std::int64_t n, std::uint64_t stream) {
    return std::async(std::launch::async, models::random_vector, n, models::derive_seed(seed, stream), 1.0);
  };
  auto q = draw(bh * S * d, 100), k = draw(bkv * S * d, 101), v = draw(bkv * S * d, 102);
  HostVec r = models::random_vector(bh * S * d, models::derive_seed(seed, 103), 1.0);
  return AttentionInputs{q.get(), k.get(), v.get(), std::move(r)};
}

AttentionReference reference_attention(const models::AttnProblem& p, const AttentionInputs& in) {
  const HostVec &q = in.q, &k = in.k, &v = in.v, &r = in.r;
  // A group is a kv head with the g = H/Hkv query heads that share it; groups are contiguous in memory,
  // so a run of consecutive groups is itself a problem of batch = run length, g heads, 1 kv head. Each
  // worker takes one run in one call, so the reference reuses its S×S buffers across the run's heads
  // (fresh large buffers cost page faults that otherwise dominate a long check).
  const std::int64_t g = p.heads / p.kv_heads, groups = p.batch * p.kv_heads;
  const std::int64_t kv_block = p.seq_len * p.head_dim, q_block = g * kv_block;
  AttentionReference out{HostVec(q.size()), HostVec(q.size()), HostVec(k.size()), HostVec(v.size())};
  auto work = [&](std::int64_t first, std::int64_t last) {
    if (first >= last) return;
    models::AttnProblem sub = p;
    sub.batch = last - first;
    sub.heads = g;
    sub.kv_heads = 1;
    const auto qs = static_cast<std::size_t>(first * q_block),
               ks = static_cast<std::size_t>(first * kv_block);
    const auto qn = static_cast<std::size_t>(sub.batch * q_block),
               kn = static_cast<std::size_t>(sub.batch * kv_block);
    const std::span<const double> qi(q.data() + qs, qn), ki(k.data() + ks, kn), vi(v.data() + ks, kn),
        ri(r.data() + qs, qn);
    const auto fwd = models::attention_forward(sub, qi, ki, vi);
    const auto bwd = models::attention_backward(sub, qi, ki, vi, ri);
    std::copy(fwd.o.begin(), fwd.o.end(), out.o.begin() + static_cast<std::ptrdiff_t>(qs));
    std::copy(bwd.dq.begin(), bwd.dq.end(), out.dq.begin() + static_cast<std::ptrdiff_t>(qs));
    std::copy(bwd.dk.begin(), bwd.dk.end(), out.dk.begin() + static_cast<std::ptrdiff_t>(ks));
    std::copy(bwd.dv.begin(), bwd.dv.end(), out.dv.begin() + static_cast<std::ptrdiff_t>(ks));
  };
  const std::int64_t workers =
      std::min<std::int64_t>(groups, std::max(1u, std::thread::hardware_concurrency()));
  // A worker that fails (out of memory) records it; all are joined before the first failure is rethrown.
  std::mutex failed_mutex;
  std::exception_ptr failed;
  auto guarded = [&](std::int64_t first, std::int64_t last) {
    try {
      work(first, last);
    } catch (...) {
      const std::lock_guard lock(failed_mutex);
      if (!failed) failed = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    for (std::int64_t w = 1; w < workers; ++w)
      pool.emplace_back(guarded, w * groups / workers, (w + 1) * groups / workers);
    guarded(0, groups / workers);
  }  // joins
  if (failed) std::rethrow_exception(failed);
  return out;
}

LayerInputs layer_inputs(const models::ModelSpec& m, std::int64_t batch, std::int64_t seq,
                         std::uint64_t seed) {
  LayerInputs in{models::make_layer_params(m), {}, {}};
  models::randomize(in.params, seed);
  in.x = models::random_vector(batch * seq * m.hidden, models::derive_seed(seed, 101), 1.0);
  in.r = models::random_vector(batch * seq * m.hidden, models::derive_seed(seed, 102), 1.0);
  return in;
}

std::vector<Array> attention_reference_arrays(const models::AttnProblem& p, const AttentionInputs& in) {
  const auto ref = reference_attention(p, in);
  const rt::Shape qs{p.batch * p.heads, p.seq_len, p.head_dim},
      ks{p.batch * p.kv_heads, p.seq_len, p.head_dim};
  return {{"O", qs, ref.o}, {"dQ", qs, ref.dq}, {"dK", ks, ref.dk}, {"dV", ks, ref.dv}};
}

std::vector<Array> layer_reference_arrays(const models::ModelSpec& m, const models::AttnProblem& p,
                                          const LayerInputs& in) {
  const auto fwd = models::layer_forward(m, p.batch, p.seq_len, p.causal, in.params, in.x, p.bounds);
  const auto bwd = models::layer_backward(m, p.batch, p.seq_len, p.causal, in.params, in.x, in.r, p.bounds);
  const rt::Shape xs{p.batch, p.seq_len, m.hidden};
  std::vector<Array> out{{"Y", xs, fwd.y}, {"dX", xs, bwd.dx}};
  for (const auto& ps : strategies::layer_param_shapes(m))
    out.push_back({gradient_name(ps.name), ps.shape, bwd.params.at(ps.name).data});
  return out;
}

std::vector<TensorCheck> compare_arrays(const std::vector<Array>& reference, const std::vector<Array>& got,
                                        double tolerance, GroupSizes sizes) {
  // Norm floor for gradients that are zero in exact arithmetic (see check/comparison.hpp).
  double largest = 0;
  for (const auto& a : reference) {
    double n2 = 0;
    for (double x : a.data) n2 += x * x;
    largest = std::max(largest, std::sqrt(n2));
  }
  std::vector<TensorCheck> out;
  for (std::size_t i = 0; i < reference.size(); ++i)
    out.push_back({reference[i].name, reference[i].shape,
                   compare_tensors(got[i].data, reference[i].data, tolerance, sizes, reference[i].name,
                                   1e-3 * largest)});
  return out;
}

}  // namespace spsim::analysis
