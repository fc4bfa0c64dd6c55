// Ring Self-Attention (ColossalAI): K and V travel the ring to build full s/P × s score rows; the
// backward reduces the full-length dK/dV by one of four `grad_reduction` variants.
//
// Per rank (P ranks, chunk c = s/P, contiguous layout):
//   forward   scores[:, :, owner] = q k_ownerᵀ for the P chunks of K (P−1 ring passes), probs =
//             softmax(scale · scores), o = Σ_owner probs[:, :, owner] v_owner (P−1 ring passes of V).
//             With attention dropout (AttnProblem::dropout) probs is dropped out first (a kernel of its
//             own, as in Megatron-LM), and both tensors stay for the backward (the dropped one for dV,
//             the softmax's output for its backward) with the mask, a byte per score.
//   backward  dprobs[:, :, owner] = do v_ownerᵀ (ring passes of V), dscores = softmax_backward,
//             dq = Σ_owner dscores[:, :, owner] k_owner (ring passes of K), and the key/value gradients
//             dK_full = dscoresᵀ q, dV_full = probsᵀ do: [B·Hkv, s, d] partial sums that every rank holds
//             for ALL s positions. Their cross-rank sum, sliced to this rank's chunk, is the exact dK/dV.
// grad_reduction:
//   allreduce_slice_div  ColossalAI as written: all-reduce dK_full/dV_full, slice, ÷P; and dq ÷P.
//                        The all-reduce already forms the exact sum, so every ÷P is a bug (1/P scale).
//   allreduce_slice      the same without the divisions: exact, 2(P−1)/P·|full| bytes sent per rank.
//                        In PyTorch the slice is a view, so the full-length buffer stays allocated for
//                        as long as the chunk's gradient lives; we keep it alive until the strategy
//                        object goes (the end of the layer's backward) to account for that memory.
//   reduce_scatter       one reduce-scatter along the sequence: exact, (P−1)/P·|full| bytes per rank.
//   ring                 a partial dK/dV accumulator per target chunk travels the ring and is completed
//                        on its owner (P−1 passes of c rows, overlapped with computing the next
//                        partial): the same bytes as reduce-scatter, and the full-length buffer is
//                        never allocated.
#include "strategies/rsa/rsa.hpp"

#include <cmath>
#include <utility>

#include "runtime/core/hash.hpp"
#include "strategies/layouts.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;
using rt::Trans;

enum class GradReduction { allreduce_slice_div, allreduce_slice, reduce_scatter, ring };

GradReduction parse_reduction(const std::string& s) {
  if (s == "allreduce_slice_div") return GradReduction::allreduce_slice_div;
  if (s == "allreduce_slice") return GradReduction::allreduce_slice;
  if (s == "reduce_scatter") return GradReduction::reduce_scatter;
  return GradReduction::ring;
}

class RingSelfAttention final : public AttentionStrategy {
 public:
  explicit RingSelfAttention(StrategyContext ctx)
      : dev_(ctx.dev),
        comm_(ctx.comm),
        problem_(ctx.problem),
        reduction_(parse_reduction(ctx.options.at("grad_reduction"))),
        rows_(ctx.positions),
        cols_(rt::Positions::range(0, problem_.seq_len)),
        seed_(ctx.seed) {}

  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) override {
    q_ = q;
    k_ = k;
    v_ = v;
    const std::int64_t bh = q.dim(0), c = q.dim(1), s = problem_.seq_len;
    Tensor scores = dev_.empty({bh, c, s});
    ring_over_chunks(k, [&](int owner, const Tensor& k_owner) {
      Tensor block = whole_row() ? scores : dev_.empty({bh, c, c});
      dev_.gemm(q, k_owner, block, Trans::N, Trans::T);
      if (!whole_row()) dev_.slice_assign(scores, 2, owner * c, block);
    });
    probs_ = dev_.empty({bh, c, s});
    dev_.softmax(scores, probs_, scale(), mask());
    dropped_ = probs_;
    if (dropout() > 0) {  // Megatron-LM's attention dropout: a kernel of its own on the probabilities
      dropped_ = dev_.empty({bh, c, s});
      mask_ = dev_.empty_mask(probs_.numel());
      dev_.dropout(probs_, Tensor(), dropped_, mask_, dropout(), rt::WordHash().add(seed_).add(dropout_round_).value());
    }
    Tensor o = dev_.empty({bh, c, q.dim(2)});
    bool first = true;
    ring_over_chunks(v, [&](int owner, const Tensor& v_owner) {
      const Tensor p = key_chunk(dropped_, owner, c);
      dev_.gemm(p, v_owner, o, Trans::N, Trans::N, 1.0, first ? 0.0 : 1.0);
      first = false;
    });
    return o;
  }

  AttnGrads backward(const Tensor& d_o) override {
    const std::int64_t bh = q_.dim(0), c = q_.dim(1), s = problem_.seq_len;
    // RingAV backward: dprobs chunk by chunk (ring passes of V), then the dV reduction.
    Tensor dprobs = dev_.empty({bh, c, s});
    ring_over_chunks(v_, [&](int owner, const Tensor& v_owner) {
      Tensor block = whole_row() ? dprobs : dev_.empty({bh, c, c});
      dev_.gemm(d_o, v_owner, block, Trans::N, Trans::T);
      if (!whole_row()) dev_.slice_assign(dprobs, 2, owner * c, block);
    });
    AttnGrads g;
    g.dv = reduce_key_grad(dropped_, d_o, v_.dim(0));
    dropped_ = Tensor();
    if (dropout() > 0) {
      Tensor kept = dev_.empty({bh, c, s});
      dev_.dropout_backward(dprobs, mask_, kept, dropout());
      dprobs = std::move(kept);
      mask_ = Tensor();
    }
    Tensor dscores = dev_.empty({bh, c, s});
    dev_.softmax_backward(probs_, dprobs, dscores, scale());
    probs_ = Tensor();
    // RingQK backward: dq over ring passes of K, then the dK reduction.
    g.dq = dev_.empty(q_.shape());
    bool first = true;
    ring_over_chunks(k_, [&](int owner, const Tensor& k_owner) {
      const Tensor ds = key_chunk(dscores, owner, c);
      dev_.gemm(ds, k_owner, g.dq, Trans::N, Trans::N, 1.0, first ? 0.0 : 1.0);
      first = false;
    });
    g.dk = reduce_key_grad(dscores, q_, k_.dim(0));
    if (reduction_ == GradReduction::allreduce_slice_div) dev_.scale(g.dq, 1.0 / comm_.size());
    ++dropout_round_;  // a forward run again before this backward (recomputation) drew the same mask
    return g;
  }

  void forget() override { q_ = k_ = v_ = probs_ = dropped_ = mask_ = Tensor(); }

 private:
  [[nodiscard]] double dropout() const { return problem_.dropout; }
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(problem_.head_dim)); }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{problem_.causal, &rows_, &cols_, &problem_.bounds}; }
  [[nodiscard]] int rank() const { return comm_.rank(); }
  // One chunk holds every key (P = 1): the score rows are the block itself, no slicing.
  [[nodiscard]] bool whole_row() const { return comm_.size() == 1; }
  // Chunk `owner` of a [bh, c, s] row tensor along the keys: a copy, or the tensor itself for P = 1.
  [[nodiscard]] Tensor key_chunk(const Tensor& rows, int owner, std::int64_t c) {
    return whole_row() ? rows : dev_.slice(rows, 2, owner * c, c);
  }

  // Visits every rank's chunk of `local` (this rank's first), passing it around the ring; the pass
  // of step i+1 is in flight while step i computes.
  template <class Fn>
  void ring_over_chunks(const Tensor& local, Fn&& fn) {
    const int p = comm_.size();
    Tensor cur = local, next;
    for (int step = 0; step < p; ++step) {
      const int owner = (rank() - step + p) % p;
      rt::Work pass;
      if (step + 1 < p) {
        next = dev_.empty_like(local);
        pass = comm_.ring_exchange(cur, next);
      }
      fn(owner, cur);
      pass.wait();
      cur = next;
    }
  }

  // Rows [t·c, (t+1)·c) of the key-side gradient aᵀ b: a [bh, c, s] (probs or dscores), b [bh, c, d]
  // (do or q); summed over query heads sharing a kv head.
  Tensor key_grad_chunk(const Tensor& a, const Tensor& b, std::int64_t kv_batch, int t) {
    const std::int64_t c = a.dim(1);
    const Tensor at = key_chunk(a, t, c);
    Tensor out = dev_.empty({kv_batch, c, b.dim(2)});
    dev_.gemm(at, b, out, Trans::T, Trans::N);
    return out;
  }

  // The exact cross-rank sum of aᵀ b restricted to this rank's chunk, by the configured variant.
  Tensor reduce_key_grad(const Tensor& a, const Tensor& b, std::int64_t kv_batch) {
    const int p = comm_.size();
    const std::int64_t c = a.dim(1), s = a.dim(2), d = b.dim(2);
    if (reduction_ == GradReduction::ring) {
      // Accumulator for target chunk t = rank−1−j (mod P) at step j; it arrives home after P−1 passes.
      Tensor acc = key_grad_chunk(a, b, kv_batch, (rank() - 1 + p) % p);
      for (int j = 1; j < p; ++j) {
        Tensor incoming = dev_.empty_like(acc);
        rt::Work pass = comm_.ring_exchange(acc, incoming);
        Tensor partial = key_grad_chunk(a, b, kv_batch, (rank() - 1 - j + 2 * p) % p);
        pass.wait();
        dev_.add(incoming, partial, partial);
        acc = partial;
      }
      return acc;
    }
    Tensor full = dev_.empty({kv_batch, s, d});
    dev_.gemm(a, b, full, Trans::T, Trans::N);
    if (reduction_ == GradReduction::reduce_scatter) {
      Tensor mine = dev_.empty({kv_batch, c, d});
      comm_.reduce_scatter(full, mine, 1).wait();
      return mine;
    }
    comm_.all_reduce(full).wait();
    Tensor mine = dev_.slice(full, 1, rank() * c, c);
    viewed_.push_back(full);  // what the view would keep alive (see the top of this file)
    if (reduction_ == GradReduction::allreduce_slice_div) dev_.scale(mine, 1.0 / p);
    return mine;
  }

  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem problem_;
  GradReduction reduction_;
  rt::Positions rows_, cols_;
  Tensor q_, k_, v_, probs_;
  Tensor dropped_;  // probs_ after dropout (probs_ itself without): what multiplies V
  Tensor mask_;     // its keep mask, a byte per element, until the backward's dropout
  std::uint64_t seed_;  // the rank's and layer's (StrategyContext::seed)
  std::uint64_t dropout_round_ = 0;
  std::vector<Tensor> viewed_;
};

}  // namespace

void register_rsa(Registry& registry) {
  StrategyInfo info;
  info.name = "rsa";
  info.description =
      "ColossalAI Ring Self-Attention: P-1 ring passes of K then of V build full s/P x s score rows; "
      "backward reduces the full-length dK/dV";
  info.options = {{"grad_reduction",
                   "how the full-length dK/dV partial sums are reduced in backward",
                   {"allreduce_slice_div", "allreduce_slice", "reduce_scatter", "ring"},
                   "allreduce_slice_div"}};
  info.check = [](const models::AttnProblem& p, int degree, const Options&) -> std::optional<std::string> {
    if (p.seq_len % degree != 0)
      return "seq_len " + std::to_string(p.seq_len) + " is not divisible by the degree " +
             std::to_string(degree);
    return std::nullopt;
  };
  info.positions = [](int rank, int degree, const models::AttnProblem& p, const Options&) {
    return layout_runs(Layout::contiguous, rank, degree, p);
  };
  info.attention_dropout = true;
  info.create = [](StrategyContext ctx) -> std::unique_ptr<AttentionStrategy> {
    return std::make_unique<RingSelfAttention>(std::move(ctx));
  };
  info.closed_form = rsa_closed_form;
  info.memory = rsa_memory;
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
