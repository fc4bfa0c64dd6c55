// Closed-form step time of ColossalAI's Ring Self-Attention (strategies/rsa/rsa.cpp): ring passes of K
// and V around the s/P × s score rows, and the dK/dV reduction of each grad_reduction variant.
#include <functional>

#include "runtime/comm.hpp"
#include "strategies/rsa/rsa.hpp"

namespace spsim::strategies {

namespace {

using rt::DType;
using rt::OpCost;
using rt::Shape;
using rt::Trans;

// Shapes of RSA on one rank (rsa.cpp): bh = B·H query batches, bkv = B·Hkv, c = s/P rows,
// s columns, d head dim.
class RsaModel {
 public:
  RsaModel(const StepConfig& config, const Hardware& hw)
      : hw_(hw),
        dt_(config.workload.dtype),
        reduction_(config.options.at("grad_reduction")),
        sigma_(config.compute_slowdown),
        p_(config.degree),
        bh_(config.workload.batch * config.model.heads),
        bkv_(config.workload.batch * config.model.kv_heads),
        s_(config.workload.seq_len),
        c_(config.workload.seq_len / config.degree),
        d_(config.model.head_dim),
        dropout_(config.model.attention_dropout) {}

  [[nodiscard]] CostEstimate estimate(bool backward) const {
    Timeline t;
    t.sigma = sigma_;
    forward(t);
    t.end_forward();
    if (backward) this->backward(t);
    return t.estimate();
  }

 private:
  [[nodiscard]] double op(const OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] Shape q_shape() const { return {bh_, c_, d_}; }
  [[nodiscard]] Shape kv_shape() const { return {bkv_, c_, d_}; }
  [[nodiscard]] Shape block() const { return {bh_, c_, c_}; }
  [[nodiscard]] Shape rows() const { return {bh_, c_, s_}; }
  [[nodiscard]] double kv_bytes() const {
    return static_cast<double>(rt::numel(kv_shape()) * rt::dtype_bytes(dt_));
  }

  // ring_over_chunks: P steps; step i < P−1 posts the next pass, computes fn(i), waits.
  void ring(Timeline& t, const std::function<double(int step)>& fn) const {
    const double pass = p_ > 1 ? hw_.ring_pass_s(kv_bytes()) : 0;
    for (int i = 0; i < p_; ++i) {
      if (i + 1 < p_)
        t.overlapped(fn(i), pass, kv_bytes());
      else
        t.compute_only(fn(i));
    }
  }

  // A block copied into (or out of) the score rows; none for P = 1, where the block is the rows.
  [[nodiscard]] double block_copy() const { return p_ > 1 ? op(rt::cost::copy(block(), dt_)) : 0; }
  // scores[:, :, owner] = q k_ownerᵀ, one block per step, copied into the score rows.
  [[nodiscard]] double qk_step() const {
    return op(rt::cost::gemm(q_shape(), kv_shape(), block(), Trans::N, Trans::T, dt_, false)) + block_copy();
  }
  // o (+)= probs[:, :, owner] v_owner: a slice copy and a gemm that accumulates after the first step.
  [[nodiscard]] double pv_step(int step) const {
    return block_copy() + op(rt::cost::gemm(block(), kv_shape(), q_shape(), Trans::N, Trans::N, dt_, step > 0));
  }

  void forward(Timeline& t) const {
    ring(t, [&](int) { return qk_step(); });
    t.compute_only(op(rt::cost::softmax(rows(), dt_)));
    if (dropout_ > 0) t.compute_only(op(rt::cost::dropout(rows(), dt_, false)));
    ring(t, [&](int i) { return pv_step(i); });
  }

  // Rows t·c.. of aᵀb for one target chunk: slice copy [bh, c, c] and gemm → [bkv, c, d].
  [[nodiscard]] double key_grad_chunk() const {
    return block_copy() + op(rt::cost::gemm(block(), q_shape(), kv_shape(), Trans::T, Trans::N, dt_, false));
  }

  // dK or dV: the exact cross-rank sum of aᵀb restricted to this rank's chunk.
  void reduce_key_grad(Timeline& t) const {
    const double e = static_cast<double>(rt::dtype_bytes(dt_));
    const double full_bytes = static_cast<double>(bkv_ * s_ * d_) * e;
    const double pp = p_;
    if (reduction_ == "ring") {
      // acc for the first target, then P−1 steps: pass acc while computing the next partial, add.
      const double chunk = key_grad_chunk(), add = op(rt::cost::add(kv_shape(), dt_));
      t.compute_only(chunk);
      const double pass = p_ > 1 ? hw_.ring_pass_s(kv_bytes()) : 0;
      for (int j = 1; j < p_; ++j) {
        t.overlapped(chunk, pass, kv_bytes());
        t.compute_only(add);
      }
      return;
    }
    t.compute_only(op(rt::cost::gemm(rows(), q_shape(), {bkv_, s_, d_}, Trans::T, Trans::N, dt_, false)));
    if (reduction_ == "reduce_scatter") {
      // Ring reduce-scatter: each rank sends (P−1) chunks of n/P. The chunks (dim 1 of [bkv, s, d]) are
      // strided when bkv > 1 and P > 1: a pack copy of n first (rt::chunks_strided).
      const double pack =
          rt::chunks_strided({bkv_, s_, d_}, 1, p_) ? op(rt::cost::copy({bkv_, s_, d_}, dt_)) : 0;
      t.comm_only(hw_.collective_s(rt::CommKind::reduce_scatter, full_bytes) + pack,
                  (pp - 1) / pp * full_bytes);
      return;
    }
    // Ring all-reduce: reduce-scatter then all-gather, 2(P−1) chunks of n/P sent per rank.
    t.comm_only(hw_.collective_s(rt::CommKind::all_reduce, full_bytes), 2 * (pp - 1) / pp * full_bytes);
    t.compute_only(op(rt::cost::copy(kv_shape(), dt_)));
    if (reduction_ == "allreduce_slice_div") t.compute_only(op(rt::cost::scale(kv_shape(), dt_)));
  }

  void backward(Timeline& t) const {
    // dprobs[:, :, owner] = do v_ownerᵀ over ring passes of V.
    ring(t, [&](int) {
      return op(rt::cost::gemm(q_shape(), kv_shape(), block(), Trans::N, Trans::T, dt_, false)) + block_copy();
    });
    reduce_key_grad(t);  // dV from (dropped) probs and do
    if (dropout_ > 0) t.compute_only(op(rt::cost::dropout_backward(rows(), dt_)));
    t.compute_only(op(rt::cost::softmax_backward(rows(), dt_)));
    ring(t, [&](int i) { return pv_step(i); });  // dq = Σ dscores[:, :, owner] k_owner: same shapes as o
    reduce_key_grad(t);                          // dK from dscores and q
    if (reduction_ == "allreduce_slice_div") t.compute_only(op(rt::cost::scale(q_shape(), dt_)));
  }

  const Hardware& hw_;
  DType dt_;
  std::string reduction_;
  double sigma_;
  int p_;
  std::int64_t bh_, bkv_, s_, c_, d_;
  double dropout_;  // on the probabilities (a kernel each way)
};

}  // namespace

Modelled<CostEstimate> rsa_closed_form(const StepConfig& config, const Hardware& hw) {
  if (auto why = closed_form_scope(config)) return Modelled<CostEstimate>::none(*why);
  return RsaModel(config, hw).estimate(config.workload.passes == models::Passes::fwd_bwd);
}

}  // namespace spsim::strategies
