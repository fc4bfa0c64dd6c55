// Closed-form (α-β-γ) step time of a strategy on a cluster: the analytic cross-check of the simulator.
//
// Three ingredients, each the same model the simulator replays but summed by hand instead of by the
// event engine:
//
//  γ  compute. Per Device op, the cost formulas of runtime/cost.hpp (FLOPs and bytes from shapes)
//     fed to the compute model of DESIGN.md §6:
//         t_op = max(FLOPs / (peak[dtype] × eff[class]), bytes / (HBM × eff[class])) + launch.
//  α-β communication. With α = protocol step latency + route latency, β = 1 / (protocol efficiency ×
//     route bandwidth), n bytes and P ranks (DESIGN.md §6; Patarasuk & Yuan, JPDC 2009):
//         ring all-reduce          base + 2(P−1)(α + nβ/P)
//         ring reduce-scatter      base + (P−1)(α + nβ/P)
//         one ring pass (sendrecv) base + α + nβ          (every rank sends n to its successor)
//         all-to-all, pairwise     base + (P−1)(α + nβ/P)   (one n/P message per step)
//         all-to-all, direct       base + α + (P−1)·nβ/P    (all P−1 messages at once share the port)
//     Across nodes the ring runs C = GPUs-per-node channels of n/C each, one per NIC, and a step
//     costs its slowest hop: max(α_intra + nβ_intra/P, α_inter + nβ_inter/(C·P)). Where the
//     collective tuner picks an algorithm other than ring (tree across nodes, NVLS on H100), the
//     collective's time is that algorithm's own α-β estimate (the header of sim/collectives/<alg>.cpp).
//  Overlap. Each strategy's structure, written out per strategy in cost_model.cpp. For RSA a ring
//     step posts the pass of the next chunk, computes on the current one, then waits, so
//         one step = max(t_compute(step), t_pass),   a ring over P chunks = Σ_{steps<P−1} max(·) + t_last,
//     and the dK/dV reductions are sequential (gemm, collective, slice) except the `ring` variant,
//     whose accumulator pass overlaps computing the next partial: P−1 steps of max(t_chunk, t_pass) + t_add.
//     Ulysses (cost_model_ulysses.cpp) overlaps nothing: all-to-alls of q, k, v (or one of the packed
//     buffer, `fused`), attention on H/P heads over the whole sequence, all-to-all of o; mirrored in
//     backward. all-gather-KV (cost_model_allgather_kv.cpp): AG(K) + AG(V) + attention; fills +
//     attention backward + RS(dK) + RS(dV). Ring Attention (cost_model_ring.cpp): per step
//     max(t_block, t_K/V passes) forward; backward each step overlaps the block's gradient with the
//     K/V pass and the previous step's dK/dV accumulator pass; under a causal mask each rank's blocks
//     have their own unmasked fraction and the slowest rank sets the step. USP (cost_model_usp.cpp,
//     u = ulysses_degree, r = P/u): Ulysses' all-to-alls over the u GPUs of a Ulysses group around
//     Ring Attention at ring position i on H/u heads and s/r-token blocks, passed over the ring
//     group's GPUs (j, u+j, …: across nodes when u fills a node);
//         A2A_u(q, k, v) + ring_fwd(i) + A2A_u(o)   [+ A2A_u(dO) + ring_bwd(i) + A2A_u(dq, dk, dv)],
//     the slowest i setting the step (the u members of a Ulysses group share i, so none waits).
//     Communication kernels slow concurrent compute by simulation.compute_slowdown σ, which turns
//     max(t_compute, t_pass) into max(t_pass, t_compute + σ/(1+σ)·t_pass) (derived in cost_model.cpp).
//
// On an uncontended cluster (one SP group, single node, or a ring whose every hop is its own link)
// this is what the replay computes, so the two agree to rounding; tests/compare/ pins that to 2%.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "runtime/cost.hpp"

namespace spsim::analysis {

struct CostEstimate {
  double step_s = 0;      // forward (+ backward) of one step, seconds
  double forward_s = 0;
  double backward_s = 0;
  double compute_s = 0;   // busy time of one rank's compute stream
  double comm_s = 0;      // busy time of one rank's communication stream
  double exposed_comm_s = 0;  // step − compute: communication no compute hides
  // Payload bytes one rank sends: ring passes plus ring-algorithm collective bytes (2(P−1)/P·n for an
  // all-reduce, (P−1)/P·n for a reduce-scatter); exact where the collectives run as rings.
  double bytes_sent = 0;
};

// The cluster's parameters as the closed forms read them: the GPU of the compute model, the routes
// between the SP group's GPUs (ranks on the first P GPUs, node-major) and the protocol table.
class HardwareModel {
 public:
  // Parses config.cluster; InputError for a bad cluster or a degree larger than the cluster.
  explicit HardwareModel(const Config& config);
  ~HardwareModel();
  HardwareModel(const HardwareModel&) = delete;
  HardwareModel& operator=(const HardwareModel&) = delete;

  [[nodiscard]] int ranks() const;
  [[nodiscard]] double gpu_memory_bytes() const;
  // t_op of the compute model (seconds).
  [[nodiscard]] double op_time_s(const rt::OpCost& cost) const;
  // One ring pass of `bytes` per rank (rank r → r+1): the slowest rank's sendrecv, seconds.
  [[nodiscard]] double ring_pass_s(double bytes) const;
  // The same over a subgroup: `group` lists SP ranks (0..P−1) in group order, member m sending to
  // member m+1 — e.g. a USP ring group j, u+j, 2u+j, …, whose hops may cross nodes.
  [[nodiscard]] double ring_pass_s(double bytes, const std::vector<int>& group) const;
  // A collective over the SP group with the config's algorithm choice ("auto" → the tuner's pick).
  // kind: "all_reduce" | "reduce_scatter" | "all_gather" | "all_to_all"; bytes as in nccl-tests' size
  // column (all_to_all: the send buffer, n/P to each rank). Ring, pairwise and direct by the formulas
  // above, other algorithms (tree, NVLS, hierarchical) by their own estimate.
  [[nodiscard]] double collective_s(const std::string& kind, double bytes) const;
  // The same over a subgroup of SP ranks (group order), e.g. a USP Ulysses group i·u … i·u+u−1.
  [[nodiscard]] double collective_s(const std::string& kind, double bytes, const std::vector<int>& group) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The closed form of `config`'s step at attention scope for rsa, ulysses, ring, allgather_kv and usp (one SP
// group, parallel.dp = 1), else nullopt (the compare table then shows "n/a"). Throws InputError for an
// invalid cluster or degree.
[[nodiscard]] std::optional<CostEstimate> closed_form(const Config& config);
[[nodiscard]] std::optional<CostEstimate> closed_form(const Config& config, const HardwareModel& hw);

// Peak FLOP/s of the GPU for a workload dtype (the peak_tflops key of sim::peak_key: bf16, fp16, fp32,
// fp64); InputError at workload.dtype when the GPU lists none.
[[nodiscard]] double peak_flops_for(const std::string& gpu_name, const std::map<std::string, double>& peaks,
                                    rt::DType dtype);

}  // namespace spsim::analysis
