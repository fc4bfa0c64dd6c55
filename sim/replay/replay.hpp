// Replay: runs every rank's trace on the simulated cluster and returns when each op ran (DESIGN.md §6).
//
// The rules are the trace's (runtime/core/trace_format.hpp); how they are timed here:
//  * Each rank has a host cursor that walks its records in order at zero host cost. It stops only at
//    a Wait, until the awaited CommOp has ended; a record's `issue` time is when the cursor reached it.
//  * Compute stream: launched ComputeOps run one after another in issue order; an op starts when it
//    is issued and the previous op has ended, and runs for ComputeModel::duration (skipped ops are
//    never launched). While a communication kernel of the same rank is running, compute progresses
//    at 1 / (1 + compute_slowdown) of its normal rate (communication kernels take SMs and HBM
//    bandwidth from compute kernels); the rate changes the moment a comm op starts or ends.
//  * Communication stream: CommOps run one at a time in issue order. An op is `ready` when it is
//    issued, the previous comm op has ended and every ComputeOp issued before it has ended, and no
//    compute op that started before that moment is still running: a communication kernel that
//    reaches the GPU while a compute kernel launched before it holds the SMs gets SMs only when that
//    kernel's thread blocks have all been dispatched, so it waits for the kernel's end. (Hence
//    Megatron-LM launches the async all-reduce of a column-parallel backward before the weight-
//    gradient GEMM, "to have all-reduce scheduled first and have GPU resources allocated":
//    megatron/core/tensor_parallel/layers.py; NCCL's streams run at normal priority under PyTorch.) A
//    compute op starting at the same instant runs beside it (the comm kernel was launched first). An op
//    posted in one launch group with the op before it (CommOp::joins_launch: NCCL group calls,
//    batch_isend_irecv) runs in that op's kernel and is exempt.
//    - Collectives (matched by group and seq) `start` when the last member is ready, as one call of
//      the simulator's collective API (sim/collectives) with the configured algorithm and protocol,
//      and end on every member when its last transfer arrives. A barrier is a zero-byte all-reduce.
//      A member that packs first copies its bytes (ComputeModel::duration of a copy op) and only then
//      joins; one that unpacks copies them after the exchange and ends then.
//    - Point-to-point messages are eager: a send's transfer starts when the send is ready and the
//      send part ends when the bytes have arrived; the receive part ends when the op is ready and
//      the matching message (group, src, dst, tag, ordinal) has arrived. So a send and a recv posted
//      in either order on one stream never deadlock (as with PyTorch's per-peer NCCL streams). A
//      sendrecv ends when both parts have; a message to oneself is a local copy of no link bytes.
//    A comm op counts as busy (and slows compute) from `ready` to `end`: an NCCL kernel is launched
//    when the stream reaches it and spins until its peers arrive.
//  * A trace that cannot finish (a collective some member never posts, a receive with no send)
//    throws RuntimeError naming the stuck rank and record.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "runtime/core/trace_format.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/network/network.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

struct ReplayOptions {
  // Algorithm per collective kind (rt::tuned_kinds(): all_reduce, reduce_scatter, all_gather,
  // all_to_all): a name of the collectives registry or "auto" (the simulator's tuner, as NCCL's).
  std::array<std::string, rt::kTunedKinds> algorithm{"auto", "auto", "auto", "auto"};
  std::optional<Protocol> protocol;  // nullopt: "auto" (collectives: the tuner's; p2p: Simple)
  // Fractional slowdown of compute while a communication kernel runs on the same GPU: 0.1 = compute
  // takes 10% longer during communication. The config layer sets it from the SMs NCCL's channels hold
  // (C / (SMs − C), analysis/config) where the cluster names its channel count; 0.1 is the
  // uncalibrated default for the rest.
  double compute_slowdown = 0.1;
  // Where an invalid algorithm name is reported ("collectives" + "." + kind name).
  std::string algorithm_where = "collectives";
  // A collective of every rank with nothing else in flight runs alone, so a ring across identical
  // nodes may simulate node 0's share (Collectives::start_alone; exact; with the analytical model
  // any such collective may). false: every transfer.
  bool fold_nodes = true;
  // Keep RankTimeline::issue (when the host reached each record: the memory curve's times, 8 bytes a
  // record). false leaves it empty: a simulate that writes no Chrome trace does not need it.
  bool issue_times = true;
  // Keep RankTimeline::compute and ::comm (a timing per op, what a Chrome trace or a Gantt chart
  // draws). false leaves them empty: the summaries (busy, totals, phases) are kept either way, so
  // memory then grows with ranks, not with ranks × ops.
  bool op_timings = true;
  // Whether the engine fetches each event's state ahead (Engine::set_touch_ahead; no result changes).
  // nullopt: from 4,096 ranks, where the ranks' states have outgrown the caches (replay.cpp).
  std::optional<bool> touch_ahead;
};

struct ComputeTiming {
  std::size_t record = 0;  // index in the rank's records
  Time start{}, end{};
};

struct CommTiming {
  std::size_t record = 0;
  Time ready{};  // posted on a free stream with its compute inputs done (busy from here)
  Time start{};  // data movement began (collectives: the last member was ready)
  Time end{};
  double bytes_sent = 0;  // bytes this rank put on links
  int algorithm = -1;     // index into ReplayResult::algorithms; -1 for point-to-point
  Protocol protocol = Protocol::simple;
  rt::CommKind kind = rt::CommKind::barrier;  // the CommOp's
};

// Launched compute ops of one name on one rank: how many, their time (the sum of end − start in
// seconds, in stream order) and flops.
struct ComputeTotals {
  std::string_view name;  // ComputeOp::name (static storage)
  std::size_t count = 0;
  double time_s = 0;
  double flops = 0;
};

// Busy time of one rank's streams. exposed = time the comm stream is busy (ready..end) while the
// compute stream is not: the communication that compute does not hide.
struct StreamBusy {
  Time compute{};
  Time comm{};
  Time exposed_comm{};
};

// Comm ops of one kind on one rank: how many, their busy time (the sum of end − ready in seconds, in
// stream order) and the bytes they put on links (summed in stream order).
struct CommTotals {
  rt::CommKind kind = rt::CommKind::barrier;
  std::size_t count = 0;
  double time_s = 0;
  double bytes_sent = 0;
};

// Where a phase (PhaseBegin..PhaseEnd, possibly nested) ran on one rank: from the first start to the
// last end of the ops recorded between its markers (comm ops from `ready`). A phase without a
// launched op, or never closed, has none.
struct PhaseSpan {
  std::string name;
  Time start{}, end{};
};

struct RankTimeline {
  std::vector<Time> issue;             // per record: when the host cursor reached it (empty unless
                                       // ReplayOptions::issue_times)
  std::vector<ComputeTiming> compute;  // launched ops, in stream order (empty unless op_timings)
  std::vector<CommTiming> comm;        // in stream order (= record order) (empty unless op_timings)
  Time finish{};                       // end of the rank's last op
  // The summaries, gathered as the replay goes whether or not op timings are kept (the records of a
  // streamed trace are gone when the replay ends, and the timings of a large one are not kept):
  StreamBusy busy;                            // what stream_busy() computes from the timings
  std::vector<ComputeTotals> compute_totals;  // by name, in order of first launch
  std::vector<CommTotals> comm_totals;        // by kind, in order of first end
  double bytes_sent = 0;                      // all comm ops, summed in stream order
  // Distinct (kind, algorithm index or -1 for point-to-point, protocol) of its comm ops.
  std::vector<std::tuple<rt::CommKind, int, Protocol>> algorithms;
  std::vector<PhaseSpan> phases;              // closed phases with a launched op, in order of PhaseEnd
  std::size_t records = 0;                    // records the cursor reached
  std::size_t skipped = 0;                    // ComputeOps never launched (fully masked blocks)
  std::uint64_t peak_bytes = 0;               // most bytes live (Alloc minus Free, record order)
};

struct ReplayResult {
  Time makespan{};  // max over ranks of finish
  std::vector<RankTimeline> ranks;
  std::vector<std::string> algorithms;  // names of the collective algorithms that ran
  std::uint64_t events = 0;             // engine events processed
};

// StreamBusy from a rank's op timings (ReplayOptions::op_timings): the replay's own RankTimeline::busy
// recomputed by merging the two streams' intervals.
[[nodiscard]] StreamBusy stream_busy(const RankTimeline& timeline);

// One rank's records as the replay reads them: a whole trace, or a stream that records them as the
// replay's cursor gets there and forgets those the replay is done with.
class RankRecords {
 public:
  virtual ~RankRecords() = default;
  // Record i, or nullptr past the rank's last record. The replay reaches records in order; it reads
  // again only records at or above its last release_before, and may hold a record's address until
  // then (a running op's record): a record must not move before it is released.
  [[nodiscard]] virtual const rt::trace::Record* at(std::size_t i) = 0;
  // The records from i on that sit side by side in memory, record i first (empty past the rank's last
  // record), under at()'s promise: none moves before it is released. The replay's cursor walks them
  // without a call per record. By default, record i alone.
  [[nodiscard]] virtual std::span<const rt::trace::Record> run_from(std::size_t i) {
    const rt::trace::Record* rec = at(i);
    return rec != nullptr ? std::span<const rt::trace::Record>(rec, 1) : std::span<const rt::trace::Record>{};
  }
  // The replay will not read a record below i again.
  virtual void release_before(std::size_t /*i*/) {}
  // The groups the rank has created so far: each one before the rank records a collective on it.
  [[nodiscard]] virtual std::span<const rt::trace::Group> groups() = 0;
  // A source that sums its rank's Alloc and Free instead of handing them on (TraceStreams::fold_memory)
  // gives the rank's peak live bytes here once at() has returned nullptr; the replay takes it as the
  // rank's peak. Records walked in order give the same number, so the result does not change.
  [[nodiscard]] virtual std::optional<std::uint64_t> folded_peak_bytes() { return std::nullopt; }
};

// Replays traces[r] on cluster.gpus()[r]. Needs traces.size() <= cluster.gpus().size()
// (std::invalid_argument otherwise: callers report it against their own input).
[[nodiscard]] ReplayResult replay(std::span<const rt::trace::RankTrace> traces, const Cluster& cluster,
                                  NetworkMode mode, const ComputeModel& model,
                                  const ReplayOptions& options = {});
// The same for records read as the replay goes (ranks[r] on cluster.gpus()[r]). Two ranks whose group
// tables give one id different members: RuntimeError.
[[nodiscard]] ReplayResult replay(std::span<RankRecords* const> ranks, const Cluster& cluster, NetworkMode mode,
                                  const ComputeModel& model, const ReplayOptions& options = {});

}  // namespace spsim::sim
