// All-gather-KV context parallelism (Llama 3 paper, Dubey et al. 2024, arXiv:2407.21783, §3.3.2):
// all-gather K and V over the group, attend the local queries to the whole sequence, reduce-scatter
// dK and dV back to their owners.
//
// Per rank r (P ranks, in option `layout`: by default zigzag, 2P chunks of s/2P, rank r holds chunks r
// and 2P−1−r, which balances the causal work; document_zigzag or balanced under document masks):
//   forward   k_all = all_gather(k) along the sequence dim: [B·Hkv, s, d], rows in rank order, so
//             their global positions are the concatenation of every rank's layout positions (the
//             mask is built from them; no reordering copy is needed). o, lse = one attention block
//             of the local queries against k_all, v_all. A ring all-gather sends (P−1)/P of the
//             gathered tensor per rank: (P−1)(|k| + |v|) with |k| the local shard.
//   backward  one attention block backward gives dq and the partial dK, dV for the WHOLE sequence
//             ([B·Hkv, s, d]); a reduce-scatter along the sequence sums them over the group and leaves
//             each rank its own rows: (P−1)/P of the full-length tensors, (P−1)(|dk| + |dv|) per rank.
// The gathered K/V are kept from forward to backward (the paper's choice; re-gathering would trade
// memory for a second all-gather). With GQA the gathered tensors are small next to Q, which is why
// Llama 3 prefers this over passing K/V around a ring.
#include "strategies/allgather_kv/allgather_kv.hpp"

#include <cmath>
#include <utility>

#include "strategies/allgather_kv/needed_kv.hpp"
#include "strategies/layouts.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

namespace {

using rt::Tensor;

class AllGatherKv final : public AttentionStrategy {
 public:
  explicit AllGatherKv(StrategyContext ctx)
      : dev_(ctx.dev), comm_(ctx.comm), pr_(ctx.problem), rows_(ctx.positions) {
    const int p = comm_.size();
    const Layout layout = parse_layout(ctx.options.at("layout"));
    for (int owner = 0; owner < p; ++owner) cols_.append(layout_runs(layout, owner, p, pr_));
  }

  Tensor forward(const Tensor& q, const Tensor& k, const Tensor& v) override {
    const int p = comm_.size();
    q_ = q;
    k_all_ = dev_.empty({k.dim(0), k.dim(1) * p, k.dim(2)});
    v_all_ = dev_.empty({v.dim(0), v.dim(1) * p, v.dim(2)});
    rt::Work wk = comm_.all_gather(k, k_all_, 1);
    rt::Work wv = comm_.all_gather(v, v_all_, 1);
    wk.wait();
    wv.wait();
    o_ = dev_.empty(q.shape());
    lse_ = dev_.empty({q.dim(0), q.dim(1)});
    dev_.attention_block_forward(q, k_all_, v_all_, o_, lse_, scale(), mask());
    return o_;
  }

  AttnGrads backward(const Tensor& d_o) override {
    const int p = comm_.size();
    Tensor dq = dev_.zeros(q_.shape());
    Tensor dk_all = dev_.zeros(k_all_.shape()), dv_all = dev_.zeros(v_all_.shape());
    dev_.attention_block_backward(q_, k_all_, v_all_, o_, d_o, lse_, dq, dk_all, dv_all, scale(), mask());
    forget();
    const std::int64_t local = dk_all.dim(1) / p;
    AttnGrads g{dq, dev_.empty({dk_all.dim(0), local, dk_all.dim(2)}),
                dev_.empty({dv_all.dim(0), local, dv_all.dim(2)})};
    rt::Work wk = comm_.reduce_scatter(dk_all, g.dk, 1);
    rt::Work wv = comm_.reduce_scatter(dv_all, g.dv, 1);
    wk.wait();
    wv.wait();
    return g;
  }

  void forget() override { q_ = k_all_ = v_all_ = o_ = lse_ = Tensor(); }

 private:
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(pr_.head_dim)); }
  [[nodiscard]] rt::Mask mask() const { return rt::Mask{pr_.causal, &rows_, &cols_, &pr_.bounds}; }

  rt::Device& dev_;
  rt::Comm& comm_;
  models::AttnProblem pr_;
  rt::Positions rows_, cols_;  // local query positions; gathered key positions (rank order)
  Tensor q_, k_all_, v_all_, o_, lse_;
};

}  // namespace

void register_allgather_kv(Registry& registry) {
  StrategyInfo info;
  info.name = "allgather_kv";
  info.description =
      "Llama 3 context parallelism: all-gather K and V, local attention of the zigzag-sharded queries, "
      "reduce-scatter dK and dV";
  info.options = {{"layout", "sequence layout of the queries (see ring)", layout_names(), "zigzag"},
                  {"kv_exchange",
                   "all_gather (every rank gets all K/V) or needed (only the K/V rows some local query "
                   "attends to, point to point; dK/dV return the same way)",
                   {"all_gather", "needed"},
                   "all_gather"}};
  info.check = [](const models::AttnProblem& p, int degree, const Options& o) {
    return layout_check(parse_layout(o.count("layout") ? o.at("layout") : "zigzag"), degree, p);
  };
  info.positions = [](int rank, int degree, const models::AttnProblem& p, const Options& o) {
    return layout_runs(parse_layout(o.at("layout")), rank, degree, p);
  };
  info.create = [](StrategyContext ctx) -> std::unique_ptr<AttentionStrategy> {
    if (ctx.options.at("kv_exchange") == "needed") return make_needed_kv(std::move(ctx));
    return std::make_unique<AllGatherKv>(std::move(ctx));
  };
  info.closed_form = allgather_kv_closed_form;
  info.memory = allgather_kv_memory;
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
