// Closed-form step time: the compute model and α-β collectives of cost_model.hpp, composed per strategy.
#include "analysis/closed_form/cost_model.hpp"

#include "analysis/closed_form/cost_model_detail.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/engine.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis {

using rt::DType;
using rt::OpCost;
using rt::Shape;
using rt::Trans;

double peak_flops_for(const std::string& gpu_name, const std::map<std::string, double>& peaks, DType dtype) {
  const std::string key = sim::peak_key(dtype);
  auto it = peaks.find(key);
  if (it == peaks.end())
    throw InputError("workload.dtype", "GPU '" + gpu_name + "' lists no peak for dtype " + key);
  return it->second;
}

// ---- HardwareModel ----------------------------------------------------------------------------------

namespace {
const sim::ClusterConfig& cluster_of(const Config& c) {
  if (!c.cluster) throw InputError("cluster", "the closed form needs a cluster, e.g. {\"preset\": \"dgx-a100\"}");
  return *c.cluster;
}
}  // namespace

struct HardwareModel::Impl {
  Config config;
  sim::Cluster cluster;
  sim::Engine engine;
  std::unique_ptr<sim::Network> network;
  std::unique_ptr<sim::Collectives> collectives;
  std::vector<sim::DeviceId> ranks;
  double peak = 0;

  explicit Impl(const Config& c) : config(c), cluster(cluster_of(c)) {
    const auto& gpus = cluster.gpus();
    const int p = c.strategy.degree;
    if (static_cast<std::size_t>(p) > gpus.size())
      throw InputError("strategy.degree", "degree " + std::to_string(p) + " exceeds the cluster's " +
                                              std::to_string(gpus.size()) + " GPUs");
    ranks.assign(gpus.begin(), gpus.begin() + p);
    network = sim::make_network(sim::NetworkMode::analytical, engine, cluster);
    collectives = std::make_unique<sim::Collectives>(*network);
    const auto& gpu = cluster.config().gpu;
    peak = peak_flops_for(gpu.name, gpu.peak_flops, c.workload.dtype);
  }

  // One sendrecv of `bytes` from `src` to `dst`: the simulator's own estimate of Collectives::send.
  [[nodiscard]] double pass_s(sim::DeviceId src, sim::DeviceId dst, double bytes) const {
    return collectives->send_estimate_s(src, dst, bytes, config.collectives.protocol.value_or(sim::Protocol::simple));
  }

  // The devices of SP ranks `group` (group order).
  [[nodiscard]] std::vector<sim::DeviceId> devices(const std::vector<int>& group) const {
    std::vector<sim::DeviceId> out;
    for (int r : group) out.push_back(ranks.at(static_cast<std::size_t>(r)));
    return out;
  }

  // The simulator's estimate of the algorithm its tuner runs (or the one the config names).
  [[nodiscard]] double collective_s(rt::CommKind kind, const std::string& algorithm, double bytes,
                                    const std::vector<sim::DeviceId>& members) const {
    if (members.size() < 2) return 0;  // a group of one completes at once
    return collectives->choose(sim::CollectiveCall{kind, members, bytes, algorithm, config.collectives.protocol})
        .predicted_s;
  }
};

HardwareModel::HardwareModel(const Config& config) : impl_(std::make_unique<Impl>(config)) {}
HardwareModel::~HardwareModel() = default;

int HardwareModel::ranks() const { return static_cast<int>(impl_->ranks.size()); }
double HardwareModel::gpu_memory_bytes() const { return impl_->cluster.config().gpu.hbm_bytes; }

double HardwareModel::op_time_s(const OpCost& cost) const {
  const auto& gpu = impl_->cluster.config().gpu;
  const double eff = gpu.op_efficiency(cost.op_class);
  const double flops_s = cost.flops / (impl_->peak * eff);
  const double bytes_s = static_cast<double>(cost.bytes()) / (gpu.hbm_Bps * eff);
  return std::max(flops_s, bytes_s) + gpu.launch_overhead.seconds();
}

namespace {
std::vector<int> first_ranks(int p) {
  std::vector<int> all(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) all[static_cast<std::size_t>(r)] = r;
  return all;
}
}  // namespace

double HardwareModel::ring_pass_s(double bytes) const { return ring_pass_s(bytes, first_ranks(ranks())); }

double HardwareModel::ring_pass_s(double bytes, const std::vector<int>& group) const {
  const auto r = impl_->devices(group);
  double worst = 0;
  for (std::size_t i = 0; i < r.size(); ++i) worst = std::max(worst, impl_->pass_s(r[i], r[(i + 1) % r.size()], bytes));
  return worst;
}

double HardwareModel::collective_s(const std::string& kind, double bytes) const {
  return collective_s(kind, bytes, first_ranks(ranks()));
}

double HardwareModel::collective_s(const std::string& kind, double bytes, const std::vector<int>& group) const {
  const auto& c = impl_->config.collectives;
  const auto m = impl_->devices(group);
  for (rt::CommKind k : rt::tuned_kinds())
    if (kind == rt::comm_kind_name(k)) return impl_->collective_s(k, c.of(k), bytes, m);
  throw std::invalid_argument("collective_s: unknown kind " + kind);
}

// ---- RSA ------------------------------------------------------------------------------------------

namespace {

using detail::Timeline;

// Shapes of RSA on one rank (strategies/rsa.cpp): bh = B·H query batches, bkv = B·Hkv, c = s/P rows,
// s columns, d head dim.
class RsaModel {
 public:
  RsaModel(const Config& config, const HardwareModel& hw)
      : hw_(hw),
        dt_(config.workload.dtype),
        reduction_(config.strategy.options.at("grad_reduction")),
        sigma_(config.simulation.compute_slowdown),
        p_(config.strategy.degree),
        bh_(config.workload.batch * config.model.heads),
        bkv_(config.workload.batch * config.model.kv_heads),
        s_(config.workload.seq_len),
        c_(config.workload.seq_len / config.strategy.degree),
        d_(config.model.head_dim) {}

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
  [[nodiscard]] double kv_bytes() const { return static_cast<double>(rt::numel(kv_shape()) * rt::dtype_bytes(dt_)); }

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

  // scores[:, :, owner] = q k_ownerᵀ, one block per step, copied into the score rows.
  [[nodiscard]] double qk_step() const {
    return op(rt::cost::gemm(q_shape(), kv_shape(), block(), Trans::N, Trans::T, dt_, false)) +
           op(rt::cost::slice_assign(block(), dt_, false));
  }
  // o (+)= probs[:, :, owner] v_owner: a slice copy and a gemm that accumulates after the first step.
  [[nodiscard]] double pv_step(int step) const {
    return op(rt::cost::copy(block(), dt_)) +
           op(rt::cost::gemm(block(), kv_shape(), q_shape(), Trans::N, Trans::N, dt_, step > 0));
  }

  void forward(Timeline& t) const {
    ring(t, [&](int) { return qk_step(); });
    t.compute_only(op(rt::cost::softmax(rows(), dt_)));
    ring(t, [&](int i) { return pv_step(i); });
  }

  // Rows t·c.. of aᵀb for one target chunk: slice copy [bh, c, c] and gemm → [bkv, c, d].
  [[nodiscard]] double key_grad_chunk() const {
    return op(rt::cost::copy(block(), dt_)) +
           op(rt::cost::gemm(block(), q_shape(), kv_shape(), Trans::T, Trans::N, dt_, false));
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
      const double pack = rt::chunks_strided({bkv_, s_, d_}, 1, p_) ? op(rt::cost::copy({bkv_, s_, d_}, dt_)) : 0;
      t.comm_only(hw_.collective_s("reduce_scatter", full_bytes) + pack, (pp - 1) / pp * full_bytes);
      return;
    }
    // Ring all-reduce: reduce-scatter then all-gather, 2(P−1) chunks of n/P sent per rank.
    t.comm_only(hw_.collective_s("all_reduce", full_bytes), 2 * (pp - 1) / pp * full_bytes);
    t.compute_only(op(rt::cost::copy(kv_shape(), dt_)));
    if (reduction_ == "allreduce_slice_div") t.compute_only(op(rt::cost::scale(kv_shape(), dt_)));
  }

  void backward(Timeline& t) const {
    // dprobs[:, :, owner] = do v_ownerᵀ over ring passes of V.
    ring(t, [&](int) {
      return op(rt::cost::gemm(q_shape(), kv_shape(), block(), Trans::N, Trans::T, dt_, false)) +
             op(rt::cost::slice_assign(block(), dt_, false));
    });
    reduce_key_grad(t);  // dV from probs and do
    t.compute_only(op(rt::cost::softmax_backward(rows(), dt_)));
    ring(t, [&](int i) { return pv_step(i); });  // dq = Σ dscores[:, :, owner] k_owner: same shapes as o
    reduce_key_grad(t);                          // dK from dscores and q
    if (reduction_ == "allreduce_slice_div") t.compute_only(op(rt::cost::scale(q_shape(), dt_)));
  }

  const HardwareModel& hw_;
  DType dt_;
  std::string reduction_;
  double sigma_;
  int p_;
  std::int64_t bh_, bkv_, s_, c_, d_;
};

}  // namespace

namespace {
// The closed form is one SP group alone on its links: a registered strategy's attention core, no DP
// replicas.
bool has_closed_form(const Config& config) {
  const std::string& s = config.strategy.name;
  const bool known = s == "rsa" || s == "ulysses" || s == "ring" || s == "allgather_kv" || s == "usp";
  return known && config.workload.scope == models::Scope::attention && config.parallel.dp == 1;
}
}  // namespace

std::optional<CostEstimate> closed_form(const Config& config, const HardwareModel& hw) {
  if (!has_closed_form(config)) return std::nullopt;
  const bool backward = config.workload.passes == models::Passes::fwd_bwd;
  const std::string& s = config.strategy.name;
  if (s == "ulysses") return detail::ulysses_closed_form(config, hw, backward);
  if (s == "ring") return detail::ring_closed_form(config, hw, backward);
  if (s == "allgather_kv") return detail::allgather_kv_closed_form(config, hw, backward);
  if (s == "usp") return detail::usp_closed_form(config, hw, backward);
  return RsaModel(config, hw).estimate(backward);
}

std::optional<CostEstimate> closed_form(const Config& config) {
  if (!has_closed_form(config)) return std::nullopt;
  const HardwareModel hw(config);
  return closed_form(config, hw);
}

}  // namespace spsim::analysis
