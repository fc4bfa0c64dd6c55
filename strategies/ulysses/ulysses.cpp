// DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509): all-to-all from sequence-sharded to
// head-sharded Q, K, V, attention over the full sequence on H/P heads, all-to-all back.
//
// Per rank (P ranks, c = s/P tokens, contiguous layout, B samples, H query heads, Hkv kv heads, d):
//   forward   q [B·H, c, d] → [B, H, c, d] → all-to-all (split heads, concat sequence) → [B·H/P, s, d];
//             the same for k, v; o, lse = attention over the whole sequence (causal mask from the
//             global positions 0..s−1, since the all-to-all concatenates the ranks' chunks in rank
//             order); o goes back by the inverse all-to-all (split sequence, concat heads).
//   backward  dO to heads (1 all-to-all), one attention backward, dQ, dK, dV back (3 all-to-alls).
// Each all-to-all leaves (P−1)/P of its local tensor on the wire (the chunk for oneself stays), so a
// rank sends (P−1)/P · (|q| + |k| + |v| + |o|) forward and (P−1)/P · (|dO| + |dq| + |dk| + |dv|) backward.
//
// qkv_fusion: `separate` posts three all-to-alls for q, k, v (and for dq, dk, dv); `fused` packs the three
// into one buffer [B, P, (H + 2 Hkv)/P · c, d] whose dim 1 is the destination rank, exchanges it with
// one all-to-all (fewer, larger messages: less latency) and unpacks with a permute (extra copies).
//
// GQA: query head h uses kv head h / (H/Hkv). With Hkv % P == 0 each rank gets Hkv/P kv heads, exactly
// those its H/P query heads use. With Hkv < P (kv_replication = replicate, P % Hkv == 0) the H/P query
// heads of rank j all use kv head j / (P/Hkv), so each kv head is repeated P/Hkv times to make P
// "slots" and rank j receives slot j: K and V cost P/Hkv times their GQA size on the wire, and in
// backward the P/Hkv replica gradients of each kv head are summed after the all-to-all.
#include "strategies/ulysses/ulysses.hpp"

#include <array>
#include <cmath>
#include <utility>

#include "strategies/compose.hpp"
#include "strategies/layouts.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;
using rt::Trans;

constexpr std::array<int, 4> kSwap12 = {0, 2, 1, 3};

class Ulysses final : public AttentionStrategy {
 public:
  // `inner`, when given, replaces the attention over the gathered sequence (strategies/compose.hpp).
  explicit Ulysses(StrategyContext ctx, std::unique_ptr<AttentionStrategy> inner = nullptr)
      : dev_(ctx.dev),
        comm_(ctx.comm),
        pr_(ctx.problem),
        p_(ctx.comm.size()),
        fused_(ctx.options.at("qkv_fusion") == "fused"),
        kv_rep_(pr_.kv_heads % p_ == 0 ? 1 : p_ / pr_.kv_heads),
        inner_(std::move(inner)) {
    // The all-to-all concatenates the ranks' chunks in rank order: global positions 0..s−1.
    positions_ = rt::Positions::range(0, pr_.seq_len);
  }

  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) override {
    const std::int64_t b = pr_.batch, c = q.dim(1), d = pr_.head_dim;
    auto heads = seq_to_heads({q.reshape({b, pr_.heads, c, d}), replicate_kv(k), replicate_kv(v)});
    if (inner_) return heads_to_seq({inner_->forward(heads[0], heads[1], heads[2])})[0].reshape(q.shape());
    qh_ = heads[0];
    kh_ = heads[1];
    vh_ = heads[2];
    oh_ = dev_.empty(qh_.shape());
    lse_ = dev_.empty({qh_.dim(0), qh_.dim(1)});
    dev_.attention_block_forward(qh_, kh_, vh_, oh_, lse_, scale(), mask());
    return heads_to_seq({oh_})[0].reshape(q.shape());
  }

  AttnGrads backward(const Tensor& d_o) override {
    const std::int64_t b = pr_.batch, c = d_o.dim(1), d = pr_.head_dim;
    Tensor doh = seq_to_heads({d_o.reshape({b, pr_.heads, c, d})})[0];
    if (inner_) {
      AttnGrads gh = inner_->backward(doh);
      auto seq = heads_to_seq({gh.dq, gh.dk, gh.dv});
      return AttnGrads{seq[0].reshape(d_o.shape()), reduce_replicas(seq[1]), reduce_replicas(seq[2])};
    }
    Tensor dqh = dev_.zeros(qh_.shape()), dkh = dev_.zeros(kh_.shape()), dvh = dev_.zeros(vh_.shape());
    dev_.attention_block_backward(qh_, kh_, vh_, oh_, doh, lse_, dqh, dkh, dvh, scale(), mask());
    qh_ = kh_ = vh_ = oh_ = lse_ = Tensor();
    auto seq = heads_to_seq({dqh, dkh, dvh});
    return AttnGrads{seq[0].reshape(d_o.shape()), reduce_replicas(seq[1]), reduce_replicas(seq[2])};
  }

  void forget() override {
    qh_ = kh_ = vh_ = oh_ = lse_ = Tensor();
    if (inner_) inner_->forget();
  }

 private:
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(pr_.head_dim)); }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{pr_.causal, &positions_, &positions_, &pr_.bounds}; }

  // k [B·Hkv, c, d] → [B, Hkv·rep, c, d] with kv head h repeated at slots h·rep .. h·rep+rep−1: the
  // outer product of a ones column [rep, 1] with each head's [1, c·d] row (one broadcast gemm).
  Tensor replicate_kv(const Tensor& k) {
    const std::int64_t b = pr_.batch, c = k.dim(1), d = pr_.head_dim;
    if (kv_rep_ == 1) return k.reshape({b, pr_.kv_heads, c, d});
    Tensor ones = dev_.empty({1, kv_rep_, 1});
    dev_.fill(ones, 1.0);
    Tensor out = dev_.empty({b * pr_.kv_heads, kv_rep_, c * d});
    dev_.gemm(ones, k.reshape({b * pr_.kv_heads, 1, c * d}), out, Trans::N, Trans::N);
    return out.reshape({b, pr_.kv_heads * kv_rep_, c, d});
  }

  // The adjoint of replicate_kv: dk [B, Hkv·rep, c, d] → [B·Hkv, c, d], summing each head's replicas
  // (a ones row [1, rep] times the [rep, c·d] replica rows).
  Tensor reduce_replicas(const Tensor& dk) {
    const std::int64_t b = pr_.batch, c = dk.dim(2), d = pr_.head_dim;
    if (kv_rep_ == 1) return dk.reshape({b * pr_.kv_heads, c, d});
    Tensor ones = dev_.empty({1, 1, kv_rep_});
    dev_.fill(ones, 1.0);
    Tensor out = dev_.empty({b * pr_.kv_heads, 1, c * d});
    dev_.gemm(ones, dk.reshape({b * pr_.kv_heads, kv_rep_, c * d}), out, Trans::N, Trans::N);
    return out.reshape({b * pr_.kv_heads, c, d});
  }

  // Each x: [B, P·hx, c, d] (sequence-sharded) → [B·hx, s, d] (head-sharded, full sequence).
  std::vector<Tensor> seq_to_heads(const std::vector<Tensor>& xs) {
    const std::int64_t b = pr_.batch, d = pr_.head_dim;
    std::vector<Tensor> out;
    if (fused_ && xs.size() > 1) {
      // [B, P·hx, c, d] is [B, P, hx·c, d] in memory: dim 1 is the destination rank.
      std::vector<Tensor> parts;
      for (const Tensor& x : xs) parts.push_back(x.reshape({b, p_, x.dim(1) / p_ * x.dim(2), d}));
      Tensor buf = dev_.concat(parts, 2);
      Tensor recv = dev_.empty(buf.shape());
      comm_.all_to_all(buf, recv, 1, 1).wait();  // now dim 1 is the source rank (= sequence chunk)
      std::int64_t off = 0;
      for (const Tensor& x : xs) {
        const std::int64_t hx = x.dim(1) / p_, c = x.dim(2);
        Tensor part = dev_.slice(recv, 2, off, hx * c).reshape({b, p_, hx, c * d});
        off += hx * c;
        out.push_back(dev_.permute(part, kSwap12).reshape({b * hx, p_ * c, d}));
      }
      return out;
    }
    std::vector<rt::Work> pending;
    for (const Tensor& x : xs) {
      out.push_back(dev_.empty({b, x.dim(1) / p_, x.dim(2) * p_, d}));
      pending.push_back(comm_.all_to_all(x, out.back(), 1, 2));
    }
    for (auto& w : pending) w.wait();
    for (auto& t : out) t = t.reshape({t.dim(0) * t.dim(1), t.dim(2), d});
    return out;
  }

  // Each x: [B·hx, s, d] (head-sharded) → [B, P·hx, c, d] (sequence-sharded).
  std::vector<Tensor> heads_to_seq(const std::vector<Tensor>& xs) {
    const std::int64_t b = pr_.batch, d = pr_.head_dim, s = pr_.seq_len, c = s / p_;
    std::vector<Tensor> out;
    if (fused_ && xs.size() > 1) {
      std::vector<Tensor> parts;
      for (const Tensor& x : xs) {
        const std::int64_t hx = x.dim(0) / b;
        parts.push_back(dev_.permute(x.reshape({b, hx, p_, c * d}), kSwap12).reshape({b, p_, hx * c, d}));
      }
      Tensor buf = dev_.concat(parts, 2);
      Tensor recv = dev_.empty(buf.shape());
      comm_.all_to_all(buf, recv, 1, 1).wait();
      std::int64_t off = 0;
      for (const Tensor& x : xs) {
        const std::int64_t hx = x.dim(0) / b;
        out.push_back(dev_.slice(recv, 2, off, hx * c).reshape({b, p_ * hx, c, d}));
        off += hx * c;
      }
      return out;
    }
    std::vector<rt::Work> pending;
    for (const Tensor& x : xs) {
      const std::int64_t hx = x.dim(0) / b;
      out.push_back(dev_.empty({b, hx * p_, c, d}));
      pending.push_back(comm_.all_to_all(x.reshape({b, hx, s, d}), out.back(), 2, 1));
    }
    for (auto& w : pending) w.wait();
    return out;
  }

  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem pr_;
  int p_;
  bool fused_;
  std::int64_t kv_rep_;  // copies of each kv head sent (1 unless kv_heads < P)
  rt::Positions positions_;
  Tensor qh_, kh_, vh_, oh_, lse_;
  std::unique_ptr<AttentionStrategy> inner_;
};

}  // namespace

std::optional<std::string> check_ulysses(const models::AttnProblem& p, int degree, const Options& o) {
  const std::string deg = std::to_string(degree);
  if (p.heads % degree != 0)
    return "heads " + std::to_string(p.heads) + " is not divisible by the degree " + deg +
           ": Ulysses gives every rank heads/P whole query heads";
  if (p.kv_heads % degree != 0) {
    const bool replicate = o.count("kv_replication") && o.at("kv_replication") == "replicate";
    if (!replicate)
      return "kv_heads " + std::to_string(p.kv_heads) + " is not divisible by the degree " + deg +
             "; set strategy.options.kv_replication to 'replicate' to repeat kv heads (needs degree % "
             "kv_heads "
             "== 0)";
    if (degree % p.kv_heads != 0)
      return "kv_replication 'replicate' needs the degree " + deg + " to be a multiple of kv_heads " +
             std::to_string(p.kv_heads) + " (each rank's query heads must share one kv head)";
  }
  if (p.seq_len % degree != 0)
    return "seq_len " + std::to_string(p.seq_len) + " is not divisible by the degree " + deg +
           ": every rank holds s/P consecutive tokens";
  return std::nullopt;
}

std::unique_ptr<AttentionStrategy> make_ulysses(StrategyContext ctx,
                                                std::unique_ptr<AttentionStrategy> inner) {
  return std::make_unique<Ulysses>(std::move(ctx), std::move(inner));
}

void register_ulysses(Registry& registry) {
  StrategyInfo info;
  info.name = "ulysses";
  info.description =
      "DeepSpeed-Ulysses: all-to-all from sequence- to head-sharded Q, K, V; attention on heads/P heads "
      "over the full sequence; all-to-all back (mirrored in backward)";
  info.options = {{"qkv_fusion",
                   "one all-to-all on a packed Q/K/V (and dQ/dK/dV) buffer, or one per tensor",
                   {"separate", "fused"},
                   "separate"},
                  {"kv_replication",
                   "with kv_heads < degree, repeat each kv head degree/kv_heads times (extra traffic)",
                   {"none", "replicate"},
                   "none"}};
  info.check = check_ulysses;
  info.positions = [](int rank, int degree, const models::AttnProblem& p, const Options&) {
    return layout_runs(Layout::contiguous, rank, degree, p);
  };
  info.create = [](StrategyContext ctx) -> std::unique_ptr<AttentionStrategy> {
    return std::make_unique<Ulysses>(std::move(ctx));
  };
  info.closed_form = ulysses_closed_form;
  info.memory = ulysses_memory;
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
