// Hand-made traces and small explicit clusters for the replay tests.
#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "runtime/trace/trace.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/replay/replay.hpp"

namespace replay_test {

using namespace spsim;
using namespace spsim::sim;
namespace tr = spsim::rt::trace;

// A GPU whose GEMMs run at exactly `flops_per_s` (peak 2·flops_per_s, efficiency 0.5), no launch
// overhead, HBM `hbm_Bps` at efficiency 0.5 for elementwise ops.
inline GpuSpec test_gpu(double flops_per_s = 1e14, double hbm_Bps = 2e12) {
  GpuSpec g;
  g.name = "test-gpu";
  g.peak_flops["bf16"] = 2 * flops_per_s;
  g.hbm_bytes = 1e9;
  g.hbm_Bps = hbm_Bps;
  g.efficiency.fill(0.5);
  g.launch_overhead = Time{};
  return g;
}

// P GPUs on one non-blocking switch; every GPU <-> switch link has `Bps` per direction and
// `hop` latency, so a GPU-to-GPU route is two hops (latency 2·hop) at Bps. The protocol adds
// nothing (no base or step latency, Simple efficiency 1): a message of n bytes takes 2·hop + n/Bps.
inline ClusterConfig star(int p, double Bps, Time hop) {
  ClusterConfig c;
  c.name = "star";
  c.gpu = test_gpu();
  ExplicitTopology t;
  for (int i = 0; i < p; ++i) t.devices.push_back({"g" + std::to_string(i), DeviceKind::gpu, 0, false});
  t.devices.push_back({"sw", DeviceKind::network_switch, 0, false});
  for (int i = 0; i < p; ++i) {
    LinkSpec s;
    s.name = "test";
    s.bandwidth_Bps = Bps;
    s.latency = hop;
    s.link_class = LinkClass::network;
    t.links.push_back({"g" + std::to_string(i), "sw", s, true});
  }
  c.topology = t;
  for (auto& e : c.tuning.protocols) {
    e.ring_base_latency = Time{};
    e.tree_base_latency = Time{};
    e.step_latency = {Time{}, Time{}, Time{}};
  }
  return c;
}

// Builds one rank's trace record by record.
class TraceBuilder {
 public:
  TraceBuilder(int rank, int world) {
    trace_.rank = rank;
    std::vector<int> members(static_cast<std::size_t>(world));
    std::iota(members.begin(), members.end(), 0);
    const tr::Group g{tr::group_id(members), std::move(members)};
    group_ = g.id;
    trace_.groups.push_back(g);
  }
  std::size_t gemm(double flops, bool skipped = false) {
    tr::ComputeOp op;
    op.name = "gemm";
    op.op_class = rt::OpClass::gemm;
    op.flops = flops;
    op.skipped = skipped;
    return add(op);
  }
  std::size_t elementwise(std::uint64_t bytes) {
    tr::ComputeOp op;
    op.name = "add";
    op.op_class = rt::OpClass::elementwise;
    op.bytes_read = bytes;
    return add(op);
  }
  // pack / unpack: the op's bytes are copied through a staging buffer before / after the exchange
  // (strided chunks).
  std::size_t collective(tr::CommKind kind, std::uint64_t bytes, std::uint64_t seq, bool pack = false,
                         bool unpack = false) {
    tr::CommOp op;
    op.kind = kind;
    op.group = group_;
    op.bytes = bytes;
    op.seq = seq;
    op.packs = pack;
    op.unpacks = unpack;
    return add(op);
  }
  // joins_launch: in one launch group with the comm op recorded before it (CommOp::joins_launch).
  std::size_t sendrecv(int dst, int src, std::uint64_t bytes, std::uint64_t seq, bool joins_launch = false) {
    tr::CommOp op;
    op.joins_launch = joins_launch;
    op.kind = tr::CommKind::sendrecv;
    op.group = group_;
    op.bytes = op.recv_bytes = bytes;
    op.dst = dst;
    op.src = src;
    op.seq = op.recv_seq = seq;
    return add(op);
  }
  std::size_t send(int dst, std::uint64_t bytes, std::uint64_t seq = 0) {
    tr::CommOp op;
    op.kind = tr::CommKind::send;
    op.group = group_;
    op.bytes = bytes;
    op.dst = dst;
    op.seq = seq;
    return add(op);
  }
  std::size_t recv(int src, std::uint64_t bytes, std::uint64_t seq = 0) {
    tr::CommOp op;
    op.kind = tr::CommKind::recv;
    op.group = group_;
    op.recv_bytes = bytes;
    op.src = src;
    op.recv_seq = seq;
    return add(op);
  }
  void wait(std::size_t comm_record) { add(tr::Wait{comm_record}); }
  void alloc(std::uint64_t id, std::uint64_t bytes) { add(tr::Alloc{id, bytes}); }
  void free(std::uint64_t id, std::uint64_t bytes) { add(tr::Free{id, bytes}); }
  void phase(std::string_view name, bool begin) {  // a literal: the record keeps the view
    if (begin)
      add(tr::PhaseBegin{name});
    else
      add(tr::PhaseEnd{name});
  }
  [[nodiscard]] const tr::RankTrace& trace() const { return trace_; }

 private:
  std::size_t add(tr::Record r) {
    trace_.records.push_back(std::move(r));
    return trace_.records.size() - 1;
  }
  tr::RankTrace trace_;
  tr::GroupId group_ = 0;
};

inline ReplayResult run(const std::vector<tr::RankTrace>& traces, const ClusterConfig& cc,
                        double slowdown = 0, NetworkMode mode = NetworkMode::flow,
                        const std::string& algorithm = "ring", bool op_timings = true) {
  const Cluster cluster(cc);
  const ComputeModel model(cc.gpu, rt::DType::bf16);
  ReplayOptions o;
  o.algorithm = {algorithm, algorithm, algorithm, algorithm == "ring" ? "pairwise" : algorithm};
  o.protocol = Protocol::simple;
  o.compute_slowdown = slowdown;
  o.op_timings = op_timings;
  return replay(traces, cluster, mode, model, o);
}

inline double ps(Time t) {
  return static_cast<double>(t.count_ps());
}

}  // namespace replay_test
