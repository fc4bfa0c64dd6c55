// USP, unified sequence parallelism (Fang & Zhao 2024, "USP: A Unified Sequence Parallelism Approach
// for Long Context Generative AI", arXiv:2405.07719): Ulysses inside groups of u ranks, Ring Attention
// across the r = P/u groups — a 2-D mesh that keeps the all-to-all on the fast intra-node links and
// passes K/V between nodes, and that is not limited to P ≤ heads as Ulysses alone is.
//
// Mesh: rank R = i·u + j is member j of Ulysses group i (ranks i·u … i·u+u−1, consecutive GPUs) and
// member i of ring group j (ranks j, u+j, 2u+j, …). Layout: the ring level splits the sequence as
// Ring Attention does (`layout`; zigzag balances causal work), giving ring member i the positions
// R_i (s/r tokens); inside Ulysses group i, member j holds the j-th contiguous share of R_i (s/P tokens).
//
// Per rank:
//   forward   Ulysses all-to-all over the group (split heads, concatenate the shares): q, k, v for H/u
//             heads over all of R_i, in R_i's order; Ring Attention over the ring group on those heads
//             (rows R_i, owner i' holds columns R_i'); all-to-all of o back.
//   backward  the mirror: dO to heads, the ring backward (K/V passes and dK/dV accumulators), dQ, dK,
//             dV back by all-to-all.
// A rank sends (u−1)/u of its q, k, v, o (forward) and dO, dq, dk, dv (backward) in all-to-alls, plus
// r−1 ring passes of its K and V blocks, which after the all-to-all hold Hkv/u heads × s/r tokens — the
// size of its own shard (Hkv × s/P), times the kv replication factor — in forward, and in backward
// r−1 passes of K, V and the dK, dV accumulators: r passes in fp32 (backward_sends separate; none when
// r = 1) or r−1 in the dtype (packed). u = P is Ulysses, u = 1 is Ring Attention.
#include "strategies/usp/usp.hpp"

#include <charconv>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "strategies/compose.hpp"
#include "strategies/layouts.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

namespace {
constexpr int kAutoUlyssesCap = 8;  // GPUs of one node on the DGX/HGX presets
}  // namespace

// ulysses_degree "0" (auto) = gcd(P, 8): the Ulysses level fills a node, the ring spans nodes. A value
// larger than the degree (however many digits) is 0: no group size, rejected by check_usp.
int usp_ulysses_degree(int degree, const Options& o) {
  const std::string text = o.count("ulysses_degree") ? o.at("ulysses_degree") : "0";
  std::uint64_t given = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), given);
  if (ec != std::errc() || end != text.data() + text.size() || given > static_cast<std::uint64_t>(degree))
    return 0;
  return given > 0 ? static_cast<int>(given) : std::gcd(degree, kAutoUlyssesCap);
}

namespace {

Options ulysses_options(const Options& o) {
  return {{"qkv_fusion", o.at("qkv_fusion")}, {"kv_replication", o.at("kv_replication")}};
}

rt::Positions usp_positions(int rank, int degree, const models::AttnProblem& p, const Options& o) {
  const int u = usp_ulysses_degree(degree, o);
  if (u < 1 || degree % u != 0) return {};  // rejected by check_usp
  const rt::Positions ring_rows = layout_runs(parse_layout(o.at("layout")), rank / u, degree / u, p);
  const std::int64_t share = ring_rows.size() / u, j = rank % u;
  return ring_rows.slice(j * share, share);
}

std::optional<std::string> check_usp(const models::AttnProblem& p, int degree, const Options& o) {
  const int u = usp_ulysses_degree(degree, o);
  if (u < 1)
    return "ulysses_degree " + (o.count("ulysses_degree") ? o.at("ulysses_degree") : std::string("?")) +
           " is larger than the degree " + std::to_string(degree);
  const std::string ud = "ulysses_degree " + std::to_string(u);
  if (degree % u != 0) return ud + " does not divide the degree " + std::to_string(degree);
  const int r = degree / u;
  Options full = {{"qkv_fusion", o.count("qkv_fusion") ? o.at("qkv_fusion") : "separate"},
                  {"kv_replication", o.count("kv_replication") ? o.at("kv_replication") : "none"}};
  models::AttnProblem group = p;
  group.seq_len = p.seq_len / r;
  if (auto why = check_ulysses(group, u, full)) return "the Ulysses level (" + ud + "): " + *why;
  const Layout layout = parse_layout(o.count("layout") ? o.at("layout") : "zigzag");
  if (auto why = layout_check(layout, r, p))
    return "the ring level (" + std::to_string(r) + " groups): " + *why;
  if ((p.seq_len / r) % u != 0)
    return "the " + std::to_string(p.seq_len / r) + " tokens of a ring group are not divisible by " + ud;
  return std::nullopt;
}

class Usp final : public AttentionStrategy {
 public:
  explicit Usp(StrategyContext ctx) {
    const int p = ctx.comm.size(), u = usp_ulysses_degree(p, ctx.options), r = p / u, rank = ctx.comm.rank();
    std::vector<int> group(static_cast<std::size_t>(p)), ring(static_cast<std::size_t>(p));
    for (int x = 0; x < p; ++x) {
      group[static_cast<std::size_t>(x)] = x / u;
      ring[static_cast<std::size_t>(x)] = x % u;
    }
    ulysses_comm_ = ctx.comm.split(group);
    ring_comm_ = ctx.comm.split(ring);
    const models::AttnProblem& pr = ctx.problem;
    // The ring level: H/u query heads (and the kv heads Ulysses hands each member) over the sequence.
    const std::int64_t kv_rep = pr.kv_heads % u == 0 ? 1 : u / pr.kv_heads;
    models::AttnProblem heads = pr;
    heads.heads = pr.heads / u;
    heads.kv_heads = pr.kv_heads * kv_rep / u;
    const Layout layout = parse_layout(ctx.options.at("layout"));
    auto ring_attention =
        make_ring_attention(StrategyContext{ctx.dev,
                                            *ring_comm_,
                                            heads,
                                            {{"layout", ctx.options.at("layout")},
                                             {"backward_sends", ctx.options.at("backward_sends")}},
                                            layout_runs(layout, rank / u, r, pr), ctx.seed});
    // The Ulysses level: the group's s/r tokens.
    models::AttnProblem group_problem = pr;
    group_problem.seq_len = pr.seq_len / r;
    core_ = make_ulysses(StrategyContext{ctx.dev, *ulysses_comm_, group_problem, ulysses_options(ctx.options),
                                         std::move(ctx.positions), ctx.seed},
                         std::move(ring_attention));
  }

  rt::Tensor forward(const rt::Tensor& q, const rt::Tensor& k, const rt::Tensor& v) override {
    return core_->forward(q, k, v);
  }
  AttnGrads backward(const rt::Tensor& d_o) override { return core_->backward(d_o); }
  void forget() override { core_->forget(); }

 private:
  std::unique_ptr<rt::Comm> ulysses_comm_, ring_comm_;  // outlive core_ (declared first)
  std::unique_ptr<AttentionStrategy> core_;
};

}  // namespace

void register_usp(Registry& registry) {
  StrategyInfo info;
  info.name = "usp";
  info.description =
      "USP (unified sequence parallelism): Ulysses all-to-all inside groups of ulysses_degree ranks, "
      "Ring Attention across the groups (2-D Ulysses x Ring)";
  info.options = {{"ulysses_degree",
                   "ranks per Ulysses group (a divisor of the degree; 0 = gcd(degree, 8), one node); the "
                   "ring spans degree/ulysses_degree groups",
                   {},
                   "0"},
                  {"layout",
                   "sequence layout of the ring level (see ring)",
                   layout_names(),
                   "zigzag"},
                  {"backward_sends",
                   "how the ring level's backward posts its dK/dV accumulator and next K/V block (see ring)",
                   {"separate", "packed"},
                   "separate"},
                  {"qkv_fusion", "as ulysses", {"separate", "fused"}, "separate"},
                  {"kv_replication", "as ulysses", {"none", "replicate"}, "none"}};
  info.check = check_usp;
  info.positions = usp_positions;
  info.create = [](StrategyContext ctx) -> std::unique_ptr<AttentionStrategy> {
    return std::make_unique<Usp>(std::move(ctx));
  };
  info.closed_form = usp_closed_form;
  info.memory = usp_memory;
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
