// Ring Attention (Liu, Zaharia, Abbeel 2023, arXiv:2310.01889): blockwise attention with online-softmax
// merging while the K/V blocks travel the ring, overlapped with the block computation.
//
// Per rank r (P ranks, local tokens at `positions` in the chosen layout):
//   forward   step j = 0..P−1 holds the K/V block of owner (r − j) mod P; the block of step j+1 is in
//             flight (ring_exchange) while step j computes attention_block_forward and merges it into
//             (o, lse) (merge_attention). P−1 passes of K and of V: a rank sends (P−1)(|k| + |v|).
//   backward  flash-attention style, from the final o and lse: step j computes owner (r − j)'s block,
//             adds its dk/dv contribution into the accumulator for that owner arriving from rank r−1
//             and sends the sum on to r+1, each pass overlapped with the next block's computation,
//             beside the P−1 passes of K and V again. Option `backward_sends` says how, after the two
//             implementations:
//             `separate` (ring-flash-attention, the one the validation rows measured; ring_flash_attn.py
//             and its zigzag and stripe variants): dq, dk and dv sum in fp32 accumulators
//             (Device::empty_accumulator), the block's dtype gradients converted or added into them;
//             the own block's contribution leaves at the end of step 0, so the accumulator for owner o
//             starts on o, visits o+1, …, o−1 and its P-th pass lands on o: P passes of fp32 dK and dV,
//             then conversions to the dtype. A rank sends (P−1)(|k| + |v|) + P(|dk| + |dv|) at 4 bytes
//             an element. The accumulator leaves at the end of a step, the next K/V block at the start
//             of the next, two launches, so the K/V pass queues behind the accumulator and reaches the
//             GPU while the block's kernel runs: it waits for the kernel (the replay's launch rule).
//             `packed` (TransformerEngine's context parallelism, which Megatron-Core uses; the backward
//             of AttnFuncWithCPAndKVP2P in transformer_engine/pytorch/attention/dot_product_attention/
//             context_parallel.py): gradients in the dtype; the own block's dk/dv stay home, the
//             accumulator for owner o starts on o+1 and its (P−1)-th pass lands on o, which adds its
//             own; K, V and the previous step's accumulator leave together at the start of each step,
//             one launch ahead of the block's kernel. A rank sends (P−1)(|k| + |v| + |dk| + |dv|).
// Masks come from global positions, so a causal mask is right in every layout, and a block whose
// every pair is masked is skipped by the device (no kernel, no time) and not merged.
#include "strategies/ring/ring.hpp"

#include <cmath>
#include <utility>

#include "runtime/cost.hpp"
#include "strategies/compose.hpp"
#include "strategies/layouts.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;

// Tags keep the concurrent K, V, dK and dV passes of a step apart on the same ring channel.
enum Tag : int { kTagK = 0, kTagV = 1, kTagDk = 2, kTagDv = 3 };

struct Pair {
  Tensor k, v;
};

class RingAttention final : public AttentionStrategy {
 public:
  explicit RingAttention(StrategyContext ctx)
      : dev_(ctx.dev),
        comm_(ctx.comm),
        pr_(ctx.problem),
        p_(ctx.comm.size()),
        layout_(parse_layout(ctx.options.at("layout"))),
        packed_(ring_backward_packed(ctx.options)),
        rows_(ctx.positions) {}

  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) override {
    q_ = q;
    k_ = k;
    v_ = v;
    o_ = dev_.empty(q.shape());
    lse_ = dev_.empty({q.dim(0), q.dim(1)});
    Pair cur{k, v};
    for (int step = 0; step < p_; ++step) {
      const int owner = owner_at(step);
      Pair next;
      std::vector<rt::Work> pass =
          step + 1 < p_ ? exchange(cur, next, kTagK, kTagV) : std::vector<rt::Work>{};
      const rt::Mask m = mask(owner);
      if (step == 0) {
        dev_.attention_block_forward(q, cur.k, cur.v, o_, lse_, scale(), m);
      } else {
        Tensor o_blk = dev_.empty(q.shape()), lse_blk = dev_.empty(lse_.shape());
        dev_.attention_block_forward(q, cur.k, cur.v, o_blk, lse_blk, scale(), m);
        if (m.unmasked_fraction() > 0) dev_.merge_attention(o_, lse_, o_blk, lse_blk);
      }
      for (auto& w : pass) w.wait();
      cur = next;
    }
    return o_;
  }

  AttnGrads backward(const Tensor& d_o) override {
    // A ring of one rank has nothing to send or sum: both orders run the block's backward straight into
    // the gradients, as one GPU does (and USP with ulysses_degree = P is Ulysses).
    AttnGrads g = packed_ || p_ == 1 ? backward_packed(d_o) : backward_separate(d_o);
    forget();
    return g;
  }

  void forget() override { q_ = k_ = v_ = o_ = lse_ = Tensor(); }

 private:
  // backward_sends = separate, ring-flash-attention's backward (ring_flash_attn.py and its zigzag and
  // stripe variants at the validation rows' commit): dq sums in an fp32 accumulator; the own block's
  // dk, dv, converted to fp32, leave at the end of step 0, and every later step adds its block's into
  // the fp32 accumulator arriving from rank r−1 (a block with no visible pair adds nothing and passes
  // the accumulator on) and sends the sum to rank r+1. P passes of fp32 dK and dV: after the last the
  // sum of every rank's contribution to this rank's block is home, and is converted to the dtype.
  // P ≥ 2 (a ring of one takes backward_packed).
  AttnGrads backward_separate(const Tensor& d_o) {
    Tensor dq_acc = dev_.empty_accumulator(q_.shape());
    Pair cur{k_, v_}, acc, incoming;
    std::vector<rt::Work> acc_pass, pass;
    for (int step = 0; step < p_; ++step) {
      const int owner = owner_at(step);
      Pair next;
      pass = step + 1 < p_ ? exchange(cur, next, kTagK, kTagV) : std::vector<rt::Work>{};
      const rt::Mask m = mask(owner);
      if (step == 0 || m.unmasked_fraction() > 0) {
        // The kernel's dk, dv of this block (the device adds into its outputs: zeroed first), and dq:
        // step 0's converted into the accumulator, later ones added into it (cost::Accumulated).
        Pair part{dev_.zeros(k_.shape()), dev_.zeros(v_.shape())};
        if (step == 0) {
          Tensor dq0 = dev_.zeros(q_.shape());
          dev_.attention_block_backward(q_, cur.k, cur.v, o_, d_o, lse_, dq0, part.k, part.v, scale(), m);
          dev_.copy(dq0, dq_acc);
          acc = Pair{dev_.empty_accumulator(k_.shape()), dev_.empty_accumulator(v_.shape())};
          dev_.copy(part.k, acc.k);
          dev_.copy(part.v, acc.v);
        } else {
          dev_.attention_block_backward(q_, cur.k, cur.v, o_, d_o, lse_, dq_acc, part.k, part.v, scale(), m);
          for (auto& w : acc_pass) w.wait();
          Pair sum{dev_.empty_accumulator(k_.shape()), dev_.empty_accumulator(v_.shape())};
          add_into(part, incoming, sum);
          acc = sum;
        }
      } else {
        for (auto& w : acc_pass) w.wait();
        acc = incoming;
      }
      acc_pass = exchange(acc, incoming, kTagDk, kTagDv);
      for (auto& w : pass) w.wait();
      cur = next;
    }
    for (auto& w : acc_pass) w.wait();
    AttnGrads g{dev_.empty(q_.shape()), dev_.empty(k_.shape()), dev_.empty(v_.shape())};
    dev_.copy(dq_acc, g.dq);
    dev_.copy(incoming.k, g.dk);
    dev_.copy(incoming.v, g.dv);
    return g;
  }

  // backward_sends = packed (TransformerEngine): gradients in the dtype; the own block's dk, dv stay
  // home, and each accumulator leaves with the next K/V block, one launch.
  AttnGrads backward_packed(const Tensor& d_o) {
    AttnGrads g{dev_.zeros(q_.shape()), dev_.zeros(k_.shape()), dev_.zeros(v_.shape())};
    Pair cur{k_, v_}, acc, incoming;
    std::vector<rt::Work> acc_pass, pass;
    bool acc_waiting = false;  // an accumulator that leaves with the next K/V block
    for (int step = 0; step < p_; ++step) {
      const int owner = owner_at(step);
      Pair next;
      {
        rt::LaunchGroup launch(comm_);
        if (acc_waiting) acc_pass = exchange(acc, incoming, kTagDk, kTagDv);
        acc_waiting = false;
        pass = step + 1 < p_ ? exchange(cur, next, kTagK, kTagV) : std::vector<rt::Work>{};
      }
      // The own block (step 0) accumulates straight into the result; others into a fresh partial.
      Pair part = step == 0 ? Pair{g.dk, g.dv} : Pair{dev_.zeros(k_.shape()), dev_.zeros(v_.shape())};
      dev_.attention_block_backward(q_, cur.k, cur.v, o_, d_o, lse_, g.dq, part.k, part.v, scale(),
                                    mask(owner));
      if (step >= 1) {
        for (auto& w : acc_pass) w.wait();
        if (step >= 2) add_into(incoming, part);  // the accumulator for `owner` from rank r−1
        acc = part;                               // keeps the buffer alive while its send is in flight
        acc_waiting = true;
      }
      for (auto& w : pass) w.wait();
      cur = next;
    }
    // The accumulator for this rank's own block arrives after its last hop.
    if (acc_waiting) acc_pass = exchange(acc, incoming, kTagDk, kTagDv);
    for (auto& w : acc_pass) w.wait();
    if (p_ > 1) add_into(incoming, Pair{g.dk, g.dv});
    return g;
  }

  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(pr_.head_dim)); }
  [[nodiscard]] int owner_at(int step) const { return (comm_.rank() - step + p_) % p_; }
  // The mask of the block of `owner`, valid until the next call: the owner's positions are made when
  // needed (closed forms; the balanced layout's are cached), not held for every owner, since a
  // simulation of P ranks keeps P strategies alive at once.
  [[nodiscard]] rt::Mask mask(int owner) {
    cols_ = layout_runs(layout_, owner, p_, pr_);
    return rt::Mask{pr_.causal, &rows_, &cols_, &pr_.bounds};
  }

  // Sends `out` to rank+1 and receives `in` (allocated here, of out's type) from rank−1, K and V as
  // two messages.
  std::vector<rt::Work> exchange(const Pair& out, Pair& in, int tag_k, int tag_v) {
    const auto like = [&](const Tensor& t) {
      return t.dtype() == dev_.dtype() ? dev_.empty(t.shape()) : dev_.empty_accumulator(t.shape());
    };
    in = Pair{like(out.k), like(out.v)};
    std::vector<rt::Work> w;
    rt::LaunchGroup launch(comm_);  // one batch of sends and receives, as ring implementations post them
    w.push_back(comm_.ring_exchange(out.k, in.k, tag_k));
    w.push_back(comm_.ring_exchange(out.v, in.v, tag_v));
    return w;
  }

  void add_into(const Pair& from, Pair to) { add_into(from, to, to); }
  void add_into(const Pair& a, const Pair& b, Pair out) {
    dev_.add(a.k, b.k, out.k);
    dev_.add(a.v, b.v, out.v);
  }

  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem pr_;
  int p_;
  Layout layout_;
  bool packed_;  // backward_sends = packed
  rt::Positions rows_;
  rt::Positions cols_;  // positions held by the owner of the block in hand (mask)
  Tensor q_, k_, v_, o_, lse_;
};

}  // namespace

bool ring_backward_packed(const Options& o) {
  const auto it = o.find("backward_sends");
  return it != o.end() && it->second == "packed";
}

std::unique_ptr<AttentionStrategy> make_ring_attention(StrategyContext ctx) {
  return std::make_unique<RingAttention>(std::move(ctx));
}

void register_ring(Registry& registry) {
  StrategyInfo info;
  info.name = "ring";
  info.description =
      "Ring Attention: P-1 ring passes of the K/V block overlapped with blockwise attention and "
      "online-softmax merging; backward passes K/V again and dK/dV accumulators travel home";
  info.options = {{"layout",
                   "sequence layout: contiguous (imbalanced under causal), zigzag (chunks r and 2P-1-r), "
                   "striped (token t on rank t mod P), document_zigzag (zigzag inside every document of "
                   "workload.mask), balanced (equal chunks dealt to equalise the unmasked work)",
                   layout_names(),
                   "contiguous"},
                  {"backward_sends",
                   "how a backward step posts the dK/dV accumulator and the next K/V block: separate "
                   "(ring-flash-attention: fp32 accumulators, P passes, each at the end of a step, K/V at "
                   "the start of the next, two launches; the K/V pass then waits for the block's kernel) "
                   "or packed (TransformerEngine / Megatron-Core: accumulators in the dtype, P-1 passes, "
                   "K, V and the accumulator in one launch at the start of each step)",
                   {"separate", "packed"},
                   "separate"}};
  info.check = [](const models::AttnProblem& p, int degree, const Options& o) {
    return layout_check(parse_layout(o.count("layout") ? o.at("layout") : "contiguous"), degree, p);
  };
  info.positions = [](int rank, int degree, const models::AttnProblem& p, const Options& o) {
    return layout_runs(parse_layout(o.at("layout")), rank, degree, p);
  };
  info.create = [](StrategyContext ctx) -> std::unique_ptr<AttentionStrategy> {
    return std::make_unique<RingAttention>(std::move(ctx));
  };
  info.closed_form = ring_closed_form;
  info.memory = ring_memory;
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
