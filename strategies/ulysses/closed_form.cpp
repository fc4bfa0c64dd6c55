// Closed-form step time of DeepSpeed-Ulysses (strategies/ulysses/ulysses.cpp): all-to-alls around one
// attention.
//
// Nothing overlaps: every all-to-all is waited for before the attention that needs it, and a
// communication op starts only once the compute issued before it has ended (sim/replay), so one rank is
//   forward   [replicate K, V] + A2A(q) + A2A(k) + A2A(v) + attention_forward + A2A(o)
//   backward  A2A(dO) + fills of dq, dk, dv + attention_backward + A2A(dq) + A2A(dk) + A2A(dv)
//             [+ sum of K/V replicas]
// with `fused` replacing each triple by concat + one A2A of the packed buffer + a slice and a permute
// per tensor (and for dQ/dK/dV a permute per tensor before the concat). Every rank does the same work,
// so the step is one rank's sum. An all-to-all of n bytes (the local tensor) costs
// Hardware::collective_s(all_to_all, n) and sends (P−1)/P·n; when its chunks are strided
// (rt::chunks_strided) it also copies n through a staging buffer before (pack) and after (unpack) the
// exchange, on the communication stream. Sequence → heads ([B, P·hx, c, d] split on dim 1 into
// [B, hx, P·c, d] on dim 2) packs when B > 1 and unpacks when B·hx > 1; heads → sequence the reverse;
// the fused buffer [B, P, ·, d] (dim 1 both ways) packs and unpacks when B > 1; none with P = 1.
// UlyssesExchange is the all-to-all part over a group of u ranks (u = P here; USP's Ulysses level,
// strategies/usp/closed_form.cpp, runs it on groups of u consecutive ranks with P/u-fold shorter head-sharded
// sequences), UlyssesModel adds the local attention.
#include <numeric>
#include <utility>

#include "strategies/ulysses/ulysses.hpp"

namespace spsim::strategies {

using rt::OpCost;
using rt::Shape;
using rt::Trans;

UlyssesExchange::UlyssesExchange(const StepConfig& c, const Hardware& hw, std::vector<int> group)
    : hw_(hw),
      dt_(c.workload.dtype),
      fused_(c.options.at("qkv_fusion") == "fused"),
      group_(std::move(group)),
      u_(std::ssize(group_)),
      b_(c.workload.batch),
      h_(c.model.heads),
      c_(c.workload.seq_len / c.degree),
      d_(c.model.head_dim),
      rep_(c.model.kv_heads % u_ == 0 ? 1 : u_ / c.model.kv_heads),
      hkv_(c.model.kv_heads * rep_) {}  // kv head slots sent (Hkv, or u with replication)

// Elements of a sequence-sharded tensor with `heads` heads: B·heads·c·d.
double UlyssesExchange::numel(std::int64_t heads) const {
  return static_cast<double>(b_ * heads * c_ * d_);
}
Shape UlyssesExchange::flat(std::int64_t heads) const {
  return {b_ * heads * c_ * d_};
}

void UlyssesExchange::all_to_all(Timeline& t, double elements, bool pack, bool unpack) const {
  const double n = elements * static_cast<double>(rt::dtype_bytes(dt_));
  const double staging = op(rt::cost::copy({static_cast<std::int64_t>(elements)}, dt_));
  t.comm_only(
      hw_.collective_s(rt::CommKind::all_to_all, n, group_) + (pack ? staging : 0) + (unpack ? staging : 0),
      static_cast<double>(u_ - 1) / static_cast<double>(u_) * n);
}

// One tensor of `heads` heads (B·heads·c·d elements on every rank) between layouts, unfused.
void UlyssesExchange::all_to_all_one(Timeline& t, std::int64_t heads, bool to_heads) const {
  const int u = static_cast<int>(u_);
  const bool seq_strided = rt::chunks_strided({b_, heads, c_, d_}, 1, u),
             heads_strided = rt::chunks_strided({b_, heads / u_, u_ * c_, d_}, 2, u);
  all_to_all(t, numel(heads), to_heads ? seq_strided : heads_strided, to_heads ? heads_strided : seq_strided);
}

// K or V [B·Hkv, c, d] → [B·Hkv, rep, c·d]: a fill of the ones column and one broadcast gemm; `reduce`:
// the adjoint (a ones row times the [rep, c·d] replica rows).
double UlyssesExchange::replicate(bool reduce) const {
  const std::int64_t bk = b_ * (hkv_ / rep_);
  const Shape ones = reduce ? Shape{1, 1, rep_} : Shape{1, rep_, 1};
  const Shape one = {bk, 1, c_ * d_}, reps = {bk, rep_, c_ * d_};
  return op(rt::cost::fill(ones, dt_)) +
         op(rt::cost::gemm(ones, reduce ? reps : one, reduce ? one : reps, Trans::N, Trans::N, dt_, false));
}

// Q, K, V (or dQ, dK, dV) between layouts. to_heads: sequence → heads (after the A2A: slice,
// permute); else heads → sequence (before it: permute; after: slice).
void UlyssesExchange::exchange_three(Timeline& t, bool to_heads) const {
  const std::vector<std::int64_t> heads = {h_, hkv_, hkv_};
  if (!fused_) {
    for (auto hx : heads) all_to_all_one(t, hx, to_heads);
    return;
  }
  const double total = numel(h_ + 2 * hkv_);
  if (!to_heads)
    for (auto hx : heads) t.compute_only(op(rt::cost::copy(flat(hx), dt_)));    // permute
  t.compute_only(op(rt::cost::copy({static_cast<std::int64_t>(total)}, dt_)));  // concat
  // The packed buffer [B, u, (H + 2Hkv)/u·c, d], exchanged along dim 1 both ways.
  const bool strided = rt::chunks_strided({b_, u_, (h_ + 2 * hkv_) / u_ * c_, d_}, 1, static_cast<int>(u_));
  all_to_all(t, total, strided, strided);
  for (auto hx : heads) {
    t.compute_only(op(rt::cost::copy(flat(hx), dt_)));                // slice
    if (to_heads) t.compute_only(op(rt::cost::copy(flat(hx), dt_)));  // permute
  }
}

void UlyssesExchange::qkv_to_heads(Timeline& t) const {
  if (rep_ > 1) t.compute_only(2 * replicate(false));
  exchange_three(t, true);
}
// o, dO: one tensor each, never packed.
void UlyssesExchange::o_to_sequence(Timeline& t) const {
  all_to_all_one(t, h_, false);
}
void UlyssesExchange::do_to_heads(Timeline& t) const {
  all_to_all_one(t, h_, true);
}
void UlyssesExchange::grads_to_sequence(Timeline& t) const {
  exchange_three(t, false);
  if (rep_ > 1) t.compute_only(2 * replicate(true));
}

namespace {

// Ulysses alone: the exchange over all P ranks around one local attention on H/P heads over all s.
class UlyssesModel {
 public:
  UlyssesModel(const StepConfig& c, const Hardware& hw)
      : hw_(hw),
        x_(c, hw, all_ranks(c.degree)),
        dt_(c.workload.dtype),
        causal_(c.workload.causal),
        bounds_(c.workload.bounds),
        bq_(c.workload.batch * c.model.heads / c.degree),
        bk_(c.workload.batch * c.model.kv_heads * x_.kv_replication() / c.degree),
        s_(c.workload.seq_len),
        d_(c.model.head_dim),
        positions_(rt::Positions::range(0, s_)) {
    t_.sigma = c.compute_slowdown;
  }

  CostEstimate estimate(bool backward) {
    x_.qkv_to_heads(t_);
    t_.compute_only(attention_op_s(hw_, rt::cost::attention_forward(qh(), kh(), kh(), dt_, mask())));
    x_.o_to_sequence(t_);
    t_.end_forward();
    if (backward) {
      x_.do_to_heads(t_);
      t_.compute_only(op(rt::cost::fill(qh(), dt_)) + 2 * op(rt::cost::fill(kh(), dt_)));
      t_.compute_only(attention_op_s(hw_, rt::cost::attention_backward(qh(), kh(), kh(), dt_, mask())));
      x_.grads_to_sequence(t_);
    }
    return t_.estimate();
  }

 private:
  static std::vector<int> all_ranks(int p) {
    std::vector<int> r(static_cast<std::size_t>(p));
    std::iota(r.begin(), r.end(), 0);
    return r;
  }
  [[nodiscard]] double op(const OpCost& c) const { return hw_.op_time_s(c); }
  // Head-sharded shapes: [B·heads/P, s, d].
  [[nodiscard]] Shape qh() const { return {bq_, s_, d_}; }
  [[nodiscard]] Shape kh() const { return {bk_, s_, d_}; }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{causal_, &positions_, &positions_, &bounds_}; }

  const Hardware& hw_;
  UlyssesExchange x_;
  rt::DType dt_;
  bool causal_;
  rt::MaskBounds bounds_;
  std::int64_t bq_, bk_, s_, d_;
  rt::Positions positions_;
  Timeline t_;
};

}  // namespace

Modelled<CostEstimate> ulysses_closed_form(const StepConfig& config, const Hardware& hw) {
  if (auto why = closed_form_scope(config)) return Modelled<CostEstimate>::none(*why);
  return UlyssesModel(config, hw).estimate(config.workload.passes == models::Passes::fwd_bwd);
}

}  // namespace spsim::strategies
