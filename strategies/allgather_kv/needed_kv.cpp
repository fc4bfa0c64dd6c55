// All-gather-KV's mask-aware exchange (allgather_kv with kv_exchange = needed): every rank receives only
// the K/V rows some local query attends to, and returns only their dK/dV. Our design of the idea
// MagiAttention published (dispatch by the mask's needs rather than gathering everything).
//
// Each owner's s/P local rows are cut into m equal pieces (m the largest of 16, 8, 4, 2, 1 dividing
// s/P). Receiver a needs piece j of owner o iff some pair of a's query positions and the piece's key
// positions is allowed (rt::allowed_pairs > 0: counted on runs, the same on every rank, so sender and
// receiver agree without a message). Per rank r:
//   forward   in P−1 rounds (round i: to rank r + i, from rank r − i): send the pieces of r's K (and V)
//             that the receiver needs, packed in piece order (tags K, V), and receive the pieces r needs
//             from the sender; a round with nothing to send or receive posts only the other half. k_used = the own block,
//             and every owner's needed pieces, in owner order; its positions make the mask, so a query
//             sees exactly the keys the mask allows (pieces not sent hold no allowed key). One
//             attention block of the local queries against k_used.
//   backward  one attention block backward gives dq and dK, dV over k_used; every owner's slice goes
//             back to it in the reversed rounds (tags dK, dV), and the owner adds each received piece
//             into its rows.
// It sends Σ over needed pieces of (|piece of k| + |piece of v|), never more than all-gather-KV's
// (P−1)(|k| + |v|), and nothing where no query of another rank sees a rank's keys (documents inside
// one rank's share). The pieces of one pair travel as one point-to-point message per tensor.
#include "strategies/allgather_kv/needed_kv.hpp"

#include <cmath>
#include <utility>

#include "strategies/layouts.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;
enum Tag : int { kTagK = 10, kTagV = 11, kTagDk = 12, kTagDv = 13 };

// Positions [start, start + len) of the list `p` by index, as runs.
rt::Positions index_slice(const rt::Positions& p, std::int64_t start, std::int64_t len) {
  std::vector<rt::Positions::Run> runs;
  std::int64_t at = 0;  // index of the run's first position
  for (const auto& r : p.runs()) {
    const std::int64_t lo = std::max(start, at), hi = std::min(start + len, at + r.count);
    if (lo < hi) runs.push_back({r.first + (lo - at) * r.stride, r.stride, hi - lo});
    at += r.count;
  }
  return rt::Positions::of_runs(runs);
}

class NeededKv final : public AttentionStrategy {
 public:
  explicit NeededKv(StrategyContext ctx)
      : dev_(ctx.dev), comm_(ctx.comm), pr_(ctx.problem), rows_(ctx.positions) {
    const int p = comm_.size(), me = comm_.rank();
    const Layout layout = parse_layout(ctx.options.at("layout"));
    std::vector<rt::Positions> owner(static_cast<std::size_t>(p));
    for (int o = 0; o < p; ++o) owner[static_cast<std::size_t>(o)] = layout_runs(layout, o, p, pr_);
    n_ = pr_.seq_len / p;
    piece_ = n_ / needed_kv_pieces(n_);
    const auto needs = [&](int a, int o) {
      std::vector<std::int64_t> starts;
      for (std::int64_t s = 0; s < n_; s += piece_) {
        const rt::Positions keys = index_slice(owner[static_cast<std::size_t>(o)], s, piece_);
        if (rt::allowed_pairs(owner[static_cast<std::size_t>(a)], keys, pr_.causal, &pr_.bounds) > 0)
          starts.push_back(s);
      }
      return starts;
    };
    from_.resize(static_cast<std::size_t>(p));
    to_.resize(static_cast<std::size_t>(p));
    for (int o = 0; o < p; ++o) {
      if (o == me) {
        cols_.append(owner[static_cast<std::size_t>(o)]);
        continue;
      }
      from_[static_cast<std::size_t>(o)] = needs(me, o);
      for (const std::int64_t s : from_[static_cast<std::size_t>(o)])
        cols_.append(index_slice(owner[static_cast<std::size_t>(o)], s, piece_));
      to_[static_cast<std::size_t>(o)] = needs(o, me);
    }
  }

  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) override {
    q_ = q;
    k_used_ = exchange(k, kTagK);
    v_used_ = exchange(v, kTagV);
    o_ = dev_.empty(q.shape());
    lse_ = dev_.empty({q.dim(0), q.dim(1)});
    dev_.attention_block_forward(q, k_used_, v_used_, o_, lse_, scale(), mask());
    return o_;
  }

  AttnGrads backward(const Tensor& d_o) override {
    Tensor dq = dev_.zeros(q_.shape());
    Tensor dk_used = dev_.zeros(k_used_.shape()), dv_used = dev_.zeros(v_used_.shape());
    dev_.attention_block_backward(q_, k_used_, v_used_, o_, d_o, lse_, dq, dk_used, dv_used, scale(), mask());
    forget();
    AttnGrads g{dq, Tensor(), Tensor()};
    g.dk = give_back(dk_used, kTagDk);
    g.dv = give_back(dv_used, kTagDv);
    return g;
  }

  void forget() override { q_ = k_used_ = v_used_ = o_ = lse_ = Tensor(); }

 private:
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(pr_.head_dim)); }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{pr_.causal, &rows_, &cols_, &pr_.bounds}; }
  [[nodiscard]] Tensor rows_like(const Tensor& t, std::int64_t rows) { return dev_.empty({t.dim(0), rows, t.dim(2)}); }
  [[nodiscard]] std::int64_t count(const std::vector<std::int64_t>& starts) const {
    return static_cast<std::int64_t>(starts.size()) * piece_;
  }

  // Posts one round of the shift schedule: send `out` to dst (if defined), receive into `in` from src
  // (if defined). Round i of every rank sends to rank + i and receives from rank − i, so the ops of a
  // rank's stream complete in order on every backend and in the replay (no rank waits on a peer that
  // waits on it).
  void post(std::vector<rt::Work>& work, const Tensor& out, int dst, Tensor& in, int src, int tag) {
    const bool sends = out.defined(), receives = in.defined();
    if (sends && receives) work.push_back(comm_.sendrecv(out, dst, in, src, tag));
    else if (sends) work.push_back(comm_.send(out, dst, tag));
    else if (receives) work.push_back(comm_.recv(in, src, tag));
  }

  // The own block and every owner's needed pieces of x ([B·Hkv, n, d]), in owner order.
  Tensor exchange(const Tensor& x, int tag) {
    const int p = comm_.size(), me = comm_.rank();
    std::vector<Tensor> got(static_cast<std::size_t>(p)), sent(static_cast<std::size_t>(p));
    std::vector<rt::Work> work;
    for (int i = 1; i < p; ++i) {
      const int dst = (me + i) % p, src = (me - i + p) % p;
      const auto d = static_cast<std::size_t>(dst), sr = static_cast<std::size_t>(src);
      if (!to_[d].empty()) sent[d] = pack(x, to_[d]);
      if (!from_[sr].empty()) got[sr] = rows_like(x, count(from_[sr]));
      post(work, sent[d], dst, got[sr], src, tag);
    }
    for (auto& w : work) w.wait();
    std::vector<Tensor> parts;
    for (int o = 0; o < p; ++o) {
      if (o == me) parts.push_back(x);
      else if (!from_[static_cast<std::size_t>(o)].empty()) parts.push_back(got[static_cast<std::size_t>(o)]);
    }
    return parts.size() == 1 ? x : dev_.concat(parts, 1);
  }

  // The pieces of x at `starts`, one after another.
  Tensor pack(const Tensor& x, const std::vector<std::int64_t>& starts) {
    if (starts.size() == 1) return dev_.slice(x, 1, starts[0], piece_);
    std::vector<Tensor> parts;
    for (const std::int64_t s : starts) parts.push_back(dev_.slice(x, 1, s, piece_));
    return dev_.concat(parts, 1);
  }

  // Sends every owner its slice of the gradient over k_used and sums what comes back into the own rows
  // (the forward's schedule reversed: round i sends to rank − i and receives from rank + i).
  Tensor give_back(const Tensor& d_used, int tag) {
    const int p = comm_.size(), me = comm_.rank();
    std::vector<std::int64_t> offset(static_cast<std::size_t>(p), 0);  // of each owner's slice in d_used
    std::int64_t at = 0;
    for (int o = 0; o < p; ++o) {
      offset[static_cast<std::size_t>(o)] = at;
      at += o == me ? n_ : count(from_[static_cast<std::size_t>(o)]);
    }
    std::vector<Tensor> got(static_cast<std::size_t>(p)), sent(static_cast<std::size_t>(p));
    std::vector<rt::Work> work;
    for (int i = 1; i < p; ++i) {
      const int dst = (me - i + p) % p, src = (me + i) % p;
      const auto d = static_cast<std::size_t>(dst), sr = static_cast<std::size_t>(src);
      if (!from_[d].empty()) sent[d] = dev_.slice(d_used, 1, offset[d], count(from_[d]));
      if (!to_[sr].empty()) got[sr] = rows_like(d_used, count(to_[sr]));
      post(work, sent[d], dst, got[sr], src, tag);
    }
    Tensor own = dev_.slice(d_used, 1, offset[static_cast<std::size_t>(me)], n_);
    for (auto& w : work) w.wait();
    for (int a = 0; a < p; ++a) {
      const auto& starts = to_[static_cast<std::size_t>(a)];
      for (std::size_t i = 0; i < starts.size(); ++i)
        dev_.slice_assign(own, 1, starts[i],
                          dev_.slice(got[static_cast<std::size_t>(a)], 1, static_cast<std::int64_t>(i) * piece_, piece_),
                          /*accumulate=*/true);
    }
    return own;
  }

  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem pr_;
  rt::Positions rows_, cols_;  // local query positions; positions of k_used
  std::int64_t n_ = 0, piece_ = 0;
  std::vector<std::vector<std::int64_t>> from_;  // per owner: starts of the pieces this rank needs
  std::vector<std::vector<std::int64_t>> to_;    // per receiver: starts of this rank's pieces it needs
  Tensor q_, k_used_, v_used_, o_, lse_;
};

}  // namespace

int needed_kv_pieces(std::int64_t local_rows) {
  for (int m : {16, 8, 4, 2, 1})
    if (local_rows % m == 0) return m;
  return 1;
}

std::unique_ptr<AttentionStrategy> make_needed_kv(StrategyContext ctx) {
  return std::make_unique<NeededKv>(std::move(ctx));
}

}  // namespace spsim::strategies
