// The replay engine: per-rank host cursor, compute and communication streams, collective and p2p matching.
#include "sim/replay/replay.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "runtime/core/error.hpp"
#include "sim/collectives/collectives.hpp"

namespace spsim::sim {

namespace {

using rt::RuntimeError;
using rt::trace::CommOp;
using rt::trace::ComputeOp;
using rt::trace::GroupId;
using rt::trace::RankTrace;

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

constexpr int kNoPhase = -1;

// A first-in-first-out queue in one power-of-two buffer, indexed from the front. A rank's queues hold a
// few entries at a time; std::deque spreads them over a map and a 512-byte block each, and at thousands
// of ranks those blocks, cycled through as entries come and go, fall out of the caches.
template <class T>
class FifoRing {
 public:
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  T& operator[](std::size_t i) { return buf_[(head_ + i) & (cap_ - 1)]; }
  const T& operator[](std::size_t i) const { return buf_[(head_ + i) & (cap_ - 1)]; }
  void push_back(const T& v) {
    if (size_ == cap_) grow();
    buf_[(head_ + size_) & (cap_ - 1)] = v;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (cap_ - 1);
    --size_;
  }

 private:
  void grow() {
    const std::size_t cap = cap_ == 0 ? 4 : 2 * cap_;
    auto buf = std::make_unique<T[]>(cap);
    for (std::size_t i = 0; i < size_; ++i) buf[i] = (*this)[i];
    buf_ = std::move(buf);
    cap_ = cap;
    head_ = 0;
  }
  std::unique_ptr<T[]> buf_;
  std::size_t cap_ = 0, head_ = 0, size_ = 0;
};

struct PendingComm {
  std::size_t record = 0;
  // The record's op, copied when the cursor reads it: by the time the op starts, other ranks' events
  // have pushed the record out of the caches.
  CommOp op;
  std::uint64_t compute_ticket = 0;  // launched compute ops issued before it: all must have ended
};

// A comm op issued and not yet ended: its timing, and the innermost phase open when it was issued.
struct LiveComm {
  CommTiming timing;
  int phase = kNoPhase;
};

// What the stream needs of an issued compute op, taken from its record when the cursor reads it: by the
// time the op starts, other ranks' events have pushed the record out of the caches.
struct QueuedCompute {
  std::size_t record = 0;
  double flops = 0;        // ComputeOp::flops
  double duration_ps = 0;  // ComputeModel::duration
  std::size_t totals = 0;  // its name's entry in RankTimeline::compute_totals
  int phase = kNoPhase;    // the innermost phase open when it was issued
};

// The compute op running on a rank's compute stream, with its progress under a changing rate.
struct RunningCompute {
  bool busy = false;
  ComputeTiming timing;          // its record and start (end: when it ends)
  int phase = kNoPhase;
  std::size_t totals = 0;        // its name's entry in RankTimeline::compute_totals
  double flops = 0;
  double remaining_ps = 0;       // work left, in picoseconds at the normal rate
  Time since{};                  // when remaining_ps was last brought up to date
  double stretch = 1;            // wall time per unit of work now: 1 or 1 + slowdown
  Time end{};                    // when it ends at the rate it runs at now
  // The op's end as an event, when something waits on it (Replayer::compute_end_awaited); moved when
  // the rate changes. None: the op ends unobserved, and the next event of the rank catches up.
  Engine::EventId finish;
};

// A point-to-point channel message: (group, src, dst, tag, ordinal).
using MessageKey = std::tuple<GroupId, int, int, int, std::uint64_t>;
// A message its receiver holds: arrived before the receive was posted, or awaited by a posted receive.
struct Inbound {
  MessageKey key;
  bool arrived = false;  // else a receive waits for it
};

// A phase of one rank while the replay runs: the span of the ops issued while it was the innermost
// open phase; its children's spans are folded in when the replay ends.
struct PhaseAcc {
  std::string name;
  int parent = kNoPhase;
  Time start = Time::max(), end{};
};

struct RankState {
  RankRecords* records = nullptr;
  DeviceId device = 0;
  // The receiver of the rank's last send, its device and the path there (a ring pass sends to one peer
  // step after step).
  int path_dst = -1;
  DeviceId path_device = 0;
  Collectives::SendPath path;
  std::size_t cursor = 0;
  // Records [run_begin, run_end) side by side from `run` (RankRecords::run_from): the cursor's.
  const rt::trace::Record* run = nullptr;
  std::size_t run_begin = 0, run_end = 0;
  std::size_t released = 0;                  // the last release_before's bound
  std::size_t blocked_on = kNone;            // comm ordinal the cursor waits for
  FifoRing<QueuedCompute> compute_queue;  // issued, not yet started
  std::uint64_t compute_issued = 0, compute_done = 0;
  RunningCompute running;
  FifoRing<PendingComm> comm_queue;
  // Timings of the comm ops issued and not yet ended, ordinals comm_done, comm_done + 1, ...; the
  // front is the running one once it starts.
  FifoRing<LiveComm> comm_live;
  bool comm_active = false;          // comm_live.front() runs
  int parts_left = 0;                // of the active op: send and/or receive parts still open
  Time covered{};                    // compute time overlapping the active op so far (exposed comm)
  std::size_t comm_issued = 0, comm_done = 0;
  std::uint64_t live_bytes = 0;
  std::vector<PhaseAcc> phases;      // in order of PhaseBegin
  std::vector<int> open_phases;      // the nesting at the cursor, innermost last
  std::vector<int> closed_phases;    // in order of PhaseEnd
  // Messages to this rank that arrived unreceived, or receives posted and waiting: a few at a time,
  // so a vector searched from the back (the newest first) costs less than a hash map's nodes.
  std::vector<Inbound> inbox;
  [[nodiscard]] int phase() const { return open_phases.empty() ? kNoPhase : open_phases.back(); }
};

// A whole trace, held by the caller.
class WholeTrace final : public RankRecords {
 public:
  explicit WholeTrace(const RankTrace& trace) : trace_(trace) {}
  [[nodiscard]] const rt::trace::Record* at(std::size_t i) override {
    return i < trace_.records.size() ? &trace_.records[i] : nullptr;
  }
  [[nodiscard]] std::span<const rt::trace::Record> run_from(std::size_t i) override {
    if (i >= trace_.records.size()) return {};
    return std::span<const rt::trace::Record>(trace_.records).subspan(i);
  }
  [[nodiscard]] std::span<const rt::trace::Group> groups() override { return trace_.groups; }

 private:
  const RankTrace& trace_;
};

// A collective waiting for its members, keyed by (group, seq).
struct PendingCollective {
  CommKind kind = CommKind::barrier;
  std::uint64_t bytes = 0;
  std::vector<std::pair<int, std::size_t>> posted;  // (world rank, comm timing index)
};

// The simulator's call for a recorded collective: a barrier is a zero-byte all-reduce.
CommKind collective_kind(CommKind k) {
  return k == CommKind::barrier ? CommKind::all_reduce : k;
}

constexpr std::size_t kTouchAheadRanks = 4096;

class Replayer {
 public:
  // `groups`: every group of the run, merged beforehand; the others are read from each rank's table
  // when it first posts to them.
  Replayer(std::span<RankRecords* const> ranks, std::span<const rt::trace::Group> groups, const Cluster& cluster,
           NetworkMode mode, const ComputeModel& model, const ReplayOptions& options)
      : network_(make_network(mode, engine_, cluster)),
        collectives_(*network_),
        model_(model),
        options_(options),
        p2p_protocol_(options.protocol.value_or(Protocol::simple)) {
    if (!options.fold_nodes) collectives_.never_fold();
    // From kTouchAheadRanks ranks the engine fetches each event's state two events ahead
    // (EventTouches): the ranks' states (about 0.5 KB each, with their flows and queues) have then
    // outgrown the caches (on the development machine, 1 MB of L2 per core) and most events wait for
    // memory. Below, the touches' own work costs more than they save. Measured back to back on that
    // machine: zigzag-1024 +5-10% with them, USP on 2,048 ranks even, on 4,096 -5%, on 8,192 -7%.
    engine_.set_touch_ahead(options.touch_ahead.value_or(ranks.size() >= kTouchAheadRanks));
    for (const auto& g : groups) groups_.emplace(g.id, g.members);
    ranks_.resize(ranks.size());
    result_.ranks.resize(ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      ranks_[r].records = ranks[r];
      ranks_[r].device = cluster.gpus()[r];
    }
  }

  ReplayResult run() {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) advance(r);
    engine_.run();
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
      catch_up_compute(r, Time::max());  // the compute ops that ended after the rank's last event
      check_finished(r);
      if (const auto peak = state(r).records->folded_peak_bytes())
        timeline(r).peak_bytes = std::max(timeline(r).peak_bytes, *peak);
    }
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) close_phases(r);
    for (auto& t : result_.ranks) result_.makespan = std::max(result_.makespan, t.finish);
    result_.events = engine_.events_processed();
    return std::move(result_);
  }

 private:
  RankTimeline& timeline(int r) { return result_.ranks[static_cast<std::size_t>(r)]; }
  RankState& state(int r) { return ranks_[static_cast<std::size_t>(r)]; }
  // The timing of rank r's comm op of this ordinal, issued and not yet ended.
  CommTiming& comm_timing(int r, std::size_t ordinal) {
    RankState& s = state(r);
    return s.comm_live[ordinal - s.comm_done].timing;
  }

  // ---- summaries ----------------------------------------------------------------------------------

  void widen(int r, int phase, Time start, Time end) {
    if (phase == kNoPhase) return;
    PhaseAcc& p = state(r).phases[static_cast<std::size_t>(phase)];
    p.start = std::min(p.start, start);
    p.end = std::max(p.end, end);
  }

  // Each phase's span takes in its children's (a child is open only inside its parent), then the
  // closed ones with a launched op go out in order of their PhaseEnd.
  void close_phases(int r) {
    RankState& s = state(r);
    for (std::size_t k = s.phases.size(); k-- > 0;)
      if (s.phases[k].parent != kNoPhase && s.phases[k].start != Time::max())
        widen(r, s.phases[k].parent, s.phases[k].start, s.phases[k].end);
    for (const int k : s.closed_phases) {
      const PhaseAcc& p = s.phases[static_cast<std::size_t>(k)];
      if (p.start != Time::max()) timeline(r).phases.push_back({p.name, p.start, p.end});
    }
  }

  // ---- host cursor ----------------------------------------------------------------------------

  // The record `i` of rank `r`, which the replay still holds.
  const rt::trace::Record& record(int r, std::size_t i) {
    const rt::trace::Record* rec = state(r).records->at(i);
    if (rec == nullptr)
      throw RuntimeError("replay: rank " + std::to_string(r) + " record " + std::to_string(i) + " is gone");
    return *rec;
  }

  // Records below the oldest one a queue or the running comm op still needs are done with; the
  // stream hears of it every kReleaseStride records (a call per advance cost a cache miss each).
  void release(int r) {
    constexpr std::size_t kReleaseStride = 64;
    RankState& s = state(r);
    if (s.cursor < s.released + kReleaseStride) return;
    std::size_t low = s.cursor;
    if (!s.compute_queue.empty()) low = std::min(low, s.compute_queue.front().record);
    if (!s.comm_queue.empty()) low = std::min(low, s.comm_queue.front().record);
    if (s.comm_active) low = std::min(low, s.comm_live.front().timing.record);
    if (low < s.released + kReleaseStride) return;
    s.records->release_before(low);
    s.released = low;
  }

  // The record at rank r's cursor, or nullptr past its last. Records come in runs (RankRecords::
  // run_from): only a new run costs a call into the source.
  static const rt::trace::Record* at_cursor(RankState& s) {
    if (s.cursor >= s.run_end) {
      const auto run = s.records->run_from(s.cursor);
      if (run.empty()) return nullptr;
      s.run = run.data();
      s.run_begin = s.cursor;
      s.run_end = s.cursor + run.size();
    }
    const rt::trace::Record* rec = s.run + (s.cursor - s.run_begin);
    // The source wrote the records after this one long ago, so they sit in memory, not in a cache,
    // when the replay comes back to this rank: fetch the next one now, while other ranks' events run.
    if (s.cursor + 1 < s.run_end) {
      __builtin_prefetch(rec + 1);
      __builtin_prefetch(reinterpret_cast<const char*>(rec + 2) - 1);
    }
    return rec;
  }

  void advance(int r) {
    RankState& s = state(r);
    RankTimeline& tl = timeline(r);
    release(r);
    while (s.blocked_on == kNone) {
      const rt::trace::Record* rec = at_cursor(s);
      if (rec == nullptr) break;
      const std::size_t i = s.cursor++;
      tl.records = s.cursor;
      if (options_.issue_times) tl.issue.push_back(engine_.now());
      if (const auto* op = std::get_if<ComputeOp>(rec)) {
        if (op->skipped) {
          ++tl.skipped;
          continue;
        }
        s.compute_queue.push_back({i, op->flops, static_cast<double>(model_.duration(*op).count_ps()),
                                   totals_entry(tl, op->name), s.phase()});
        ++s.compute_issued;
        try_start_compute(r, engine_.now());
      } else if (const auto* comm = std::get_if<CommOp>(rec)) {
        s.comm_queue.push_back({i, *comm, s.compute_issued});
        s.comm_live.push_back({CommTiming{.record = i, .kind = comm->kind}, s.phase()});
        ++s.comm_issued;
        try_start_comm(r);
      } else if (const auto* w = std::get_if<rt::trace::Wait>(rec)) {
        const std::size_t ordinal = comm_ordinal(r, w->comm_record, i);
        if (ordinal >= s.comm_done) s.blocked_on = ordinal;
      } else if (const auto* a = std::get_if<rt::trace::Alloc>(rec)) {
        s.live_bytes += a->bytes;
        tl.peak_bytes = std::max(tl.peak_bytes, s.live_bytes);
      } else if (const auto* f = std::get_if<rt::trace::Free>(rec)) {
        s.live_bytes -= f->bytes;
      } else if (const auto* b = std::get_if<rt::trace::PhaseBegin>(rec)) {
        s.phases.push_back({std::string(b->name), s.phase()});
        s.open_phases.push_back(static_cast<int>(s.phases.size()) - 1);
      } else if (std::holds_alternative<rt::trace::PhaseEnd>(*rec) && !s.open_phases.empty()) {
        s.closed_phases.push_back(s.open_phases.back());
        s.open_phases.pop_back();
      }
    }
  }

  // Position of record `comm_record` among the rank's comm ops (they are issued in record order). One
  // older than every op still in flight has ended: any ordinal below comm_done says so.
  std::size_t comm_ordinal(int r, std::size_t comm_record, std::size_t wait_record) {
    const RankState& s = state(r);
    const auto& live = s.comm_live;
    if (comm_record < wait_record && s.comm_done > 0 && (live.empty() || comm_record < live.front().timing.record))
      return 0;
    std::size_t lo = 0, hi = live.size();  // the first live op whose record is not below comm_record
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (live[mid].timing.record < comm_record)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (comm_record >= wait_record || lo == live.size() || live[lo].timing.record != comm_record)
      throw RuntimeError("replay: rank " + std::to_string(r) + " record " + std::to_string(wait_record) +
                         " waits for record " + std::to_string(comm_record) +
                         ", which is not an earlier CommOp");
    return s.comm_done + lo;
  }

  // ---- compute stream -------------------------------------------------------------------------

  // Starts the next queued compute op at `at`: now, or the end of the op before it when the stream
  // catches up (catch_up_compute).
  void try_start_compute(int r, Time at) {
    RankState& s = state(r);
    if (s.running.busy || s.compute_queue.empty()) return;
    const QueuedCompute next = s.compute_queue.front();
    s.compute_queue.pop_front();
    s.running.busy = true;
    s.running.timing = ComputeTiming{next.record, at, at};
    s.running.phase = next.phase;
    s.running.totals = next.totals;
    s.running.flops = next.flops;
    s.running.remaining_ps = next.duration_ps;
    s.running.since = at;
    s.running.stretch = stretch(s);
    schedule_compute_end(r);
  }

  // Whether a compute op's end must be an event: the comm stream is idle and the op at its front
  // waits for the compute stream (its ticket, or the launch rule). Otherwise nothing happens at that
  // end but the rank's own bookkeeping and the start of its next compute op, and nothing but an event
  // of this rank can change that (a comm op starting, ending or being issued): so the op ends without
  // an event, and the rank's next event first brings the stream up to its time (catch_up_compute),
  // with the arithmetic the events would have done. On a ring step this spares most compute ends.
  [[nodiscard]] static bool compute_end_awaited(const RankState& s) {
    return !s.comm_active && !s.comm_queue.empty();
  }

  // The running op's end as an event, if it has none.
  void arm_compute_end(int r) {
    RunningCompute& run = state(r).running;
    if (!run.busy || engine_.is_pending(run.finish)) return;
    run.finish = engine_.schedule_at(run.end, [this, r] { end_compute(r); },
                                     {&touch_rank, this, static_cast<std::uint32_t>(r)});
  }

  // Ends the compute ops of rank r that ended before `upto` without an event, in stream order; one
  // ending at `upto` itself gets its event now, as it would have had.
  void catch_up_compute(int r, Time upto) {
    RunningCompute& run = state(r).running;
    while (run.busy && !engine_.is_pending(run.finish) && run.end < upto) finish_compute(r, run.end);
    if (run.busy && run.end == upto) arm_compute_end(r);
  }

  [[nodiscard]] double stretch(const RankState& s) const {
    return s.comm_active ? 1.0 + options_.compute_slowdown : 1.0;
  }

  void schedule_compute_end(int r) {
    RunningCompute& run = state(r).running;
    const auto wall = static_cast<std::int64_t>(std::llround(run.remaining_ps * run.stretch));
    run.end = run.since + Time::ps(wall);
    // A stale end left in the queue would only be skipped when it came up; every comm start and end
    // during a long kernel left one, and the queue grew with them. So the pending end moves.
    if (engine_.is_pending(run.finish))
      run.finish = engine_.reschedule(run.finish, run.end);
    else if (compute_end_awaited(state(r)))
      arm_compute_end(r);
  }

  // EventTouches::touch of a rank's compute end: its state and timeline, then what end_compute reaches
  // through them (the op's phase and totals, the fronts of the rank's queues).
  static void touch_rank(const void* owner, std::uint32_t r, int stage) {
    const auto& self = *static_cast<const Replayer*>(owner);
    const RankState& s = self.ranks_[r];
    const RankTimeline& tl = self.result_.ranks[r];
    if (stage == 0) {
      prefetch_lines(&s, sizeof s);
      prefetch_lines(&tl, sizeof tl);
      return;
    }
    const int phase = s.running.phase;
    if (phase != kNoPhase && static_cast<std::size_t>(phase) < s.phases.size())
      prefetch_lines(&s.phases[static_cast<std::size_t>(phase)], sizeof(PhaseAcc));
    if (s.running.totals < tl.compute_totals.size())
      prefetch_lines(&tl.compute_totals[s.running.totals], sizeof(ComputeTotals));
    if (!s.compute_queue.empty()) __builtin_prefetch(&s.compute_queue.front());
    if (!s.comm_queue.empty()) __builtin_prefetch(&s.comm_queue.front());
    if (!s.comm_live.empty()) __builtin_prefetch(&s.comm_live.front());
  }

  // The comm stream of `r` started or stopped a kernel: bring the running compute op's progress up
  // to date and reschedule its end at the new rate.
  void on_comm_activity_change(int r) {
    RankState& s = state(r);
    RunningCompute& run = s.running;
    const double next = stretch(s);
    if (!run.busy || next == run.stretch) return;
    const double elapsed = static_cast<double>((engine_.now() - run.since).count_ps());
    run.remaining_ps = std::max(0.0, run.remaining_ps - elapsed / run.stretch);
    run.since = engine_.now();
    run.stretch = next;
    schedule_compute_end(r);
  }

  // The compute_totals entry of `name` (a few names a rank: a linear search).
  static std::size_t totals_entry(RankTimeline& tl, std::string_view name) {
    for (std::size_t k = 0; k < tl.compute_totals.size(); ++k)
      if (tl.compute_totals[k].name == name) return k;
    tl.compute_totals.push_back({name});
    return tl.compute_totals.size() - 1;
  }

  void end_compute(int r) { finish_compute(r, engine_.now()); }

  // The running op of rank r ends at `at` (now, or earlier when the stream catches up).
  void finish_compute(int r, Time at) {
    RankState& s = state(r);
    RankTimeline& tl = timeline(r);
    ComputeTiming done = s.running.timing;
    done.end = at;
    ComputeTotals& totals = tl.compute_totals[s.running.totals];
    ++totals.count;
    totals.time_s += (done.end - done.start).seconds();
    totals.flops += s.running.flops;
    tl.busy.compute += done.end - done.start;
    if (s.comm_active)
      s.covered += std::max(Time{}, done.end - std::max(done.start, s.comm_live.front().timing.ready));
    widen(r, s.running.phase, done.start, done.end);
    if (options_.op_timings) tl.compute.push_back(done);
    tl.finish = std::max(tl.finish, at);
    s.running.busy = false;
    ++s.compute_done;
    try_start_compute(r, at);
    try_start_comm(r);
    // The comm op that waited for this end may have started: then nothing waits for the end of the op
    // that started beside it, whose end was made an event while the comm op still waited.
    if (s.running.busy && s.running.timing.start == at && !compute_end_awaited(s))
      engine_.cancel(s.running.finish);
  }

  // ---- communication stream ---------------------------------------------------------------------

  void try_start_comm(int r) {
    RankState& s = state(r);
    if (s.comm_active || s.comm_queue.empty()) return;
    // A comm kernel reaching the GPU while a compute kernel launched before it fills every SM gets
    // SMs only when that kernel's blocks have all been dispatched: it waits for the kernel's end.
    if (s.comm_queue.front().compute_ticket > s.compute_done ||
        (!s.comm_queue.front().op.joins_launch && s.running.busy && s.running.timing.start < engine_.now())) {
      arm_compute_end(r);  // the op waits for a compute op's end
      return;
    }
    const CommOp op = s.comm_queue.front().op;
    s.comm_queue.pop_front();
    s.comm_active = true;  // comm ops run in issue order: the next one is ordinal comm_done
    CommTiming& t = s.comm_live.front().timing;
    t.ready = t.start = engine_.now();
    s.covered = Time{};
    on_comm_activity_change(r);
    if (!rt::is_group_collective(op.kind)) {
      post_p2p(r, op);
    } else if (op.pack_bytes() == 0) {
      post_collective(r, op, s.comm_done);
    } else {  // the stream packs the strided chunks first, then joins the collective
      const std::size_t timing = s.comm_done;
      engine_.schedule_at(engine_.now() + staging_copy(op.pack_bytes()),
                          [this, r, op, timing] { post_collective(r, op, timing); });
    }
  }

  // A copy of `bytes` through a collective's staging buffer (pack or unpack): a copy-class op.
  [[nodiscard]] Time staging_copy(std::uint64_t bytes) const {
    ComputeOp copy;
    copy.name = "staging_copy";
    copy.op_class = rt::OpClass::copy;
    copy.bytes_read = copy.bytes_written = bytes;
    return model_.duration(copy);
  }

  void end_comm(int r) {
    catch_up_compute(r, engine_.now());
    RankState& s = state(r);
    RankTimeline& tl = timeline(r);
    CommTiming t = s.comm_live.front().timing;
    t.end = engine_.now();
    // Exposed: the op's busy time less the compute that ran meanwhile (ops that ended during it were
    // added as they ended; the one running now overlaps it up to now).
    if (s.running.busy) s.covered += std::max(Time{}, t.end - std::max(s.running.timing.start, t.ready));
    tl.busy.comm += t.end - t.ready;
    tl.busy.exposed_comm += (t.end - t.ready) - s.covered;
    tally_comm(tl, t);
    widen(r, s.comm_live.front().phase, t.ready, t.end);
    if (options_.op_timings) tl.comm.push_back(t);
    s.comm_live.pop_front();
    tl.finish = std::max(tl.finish, engine_.now());
    s.comm_active = false;
    ++s.comm_done;
    on_comm_activity_change(r);
    if (s.blocked_on != kNone && s.blocked_on < s.comm_done) {
      s.blocked_on = kNone;
      advance(r);
    }
    try_start_comm(r);
  }

  static void tally_comm(RankTimeline& tl, const CommTiming& t) {
    auto totals = std::find_if(tl.comm_totals.begin(), tl.comm_totals.end(),
                               [&](const CommTotals& c) { return c.kind == t.kind; });
    if (totals == tl.comm_totals.end()) totals = tl.comm_totals.insert(totals, CommTotals{t.kind});
    ++totals->count;
    totals->time_s += (t.end - t.ready).seconds();
    totals->bytes_sent += t.bytes_sent;
    tl.bytes_sent += t.bytes_sent;
    const auto algo = std::make_tuple(t.kind, t.algorithm, t.protocol);
    if (std::find(tl.algorithms.begin(), tl.algorithms.end(), algo) == tl.algorithms.end())
      tl.algorithms.push_back(algo);
  }

  void part_done(int r) {
    RankState& s = state(r);
    if (--s.parts_left == 0) {
      end_comm(r);
      return;
    }
    // The op's other part ends soon (a ring step's messages end together, an event or two apart), and
    // then the cursor reads on from a record long out of the caches: ask for it now.
    if (s.cursor < s.run_end) __builtin_prefetch(s.run + (s.cursor - s.run_begin));
  }

  // ---- collectives ------------------------------------------------------------------------------

  // Adds the groups of rank r's table the replay has not seen; an id seen with other members throws.
  void learn_groups(int r) {
    for (const auto& g : state(r).records->groups()) {
      const auto [it, added] = groups_.emplace(g.id, g.members);
      if (!added && it->second != g.members.list())
        throw RuntimeError("replay: rank " + std::to_string(r) + " has group " + std::to_string(g.id) +
                           " with other members than another rank's group of that id");
    }
  }

  void post_collective(int r, const CommOp& op, std::size_t timing) {
    auto members = groups_.find(op.group);
    if (members == groups_.end()) {
      learn_groups(r);
      members = groups_.find(op.group);
    }
    if (members == groups_.end())
      throw RuntimeError("replay: rank " + std::to_string(r) + " posts to unknown group " +
                         std::to_string(op.group));
    PendingCollective& p = pending_collectives_[{op.group, op.seq}];
    if (p.posted.empty()) {
      p.kind = op.kind;
      p.bytes = op.bytes;
    } else if (p.kind != op.kind || p.bytes != op.bytes) {
      throw RuntimeError("replay: collective " + std::to_string(op.seq) + " of group " +
                         std::to_string(op.group) + " is " + std::string(comm_kind_name(op.kind)) + " of " +
                         std::to_string(op.bytes) + " bytes on rank " + std::to_string(r) + " but " +
                         std::string(comm_kind_name(p.kind)) + " of " + std::to_string(p.bytes) +
                         " bytes on rank " + std::to_string(p.posted[0].first));
    }
    p.posted.emplace_back(r, timing);
    state(r).parts_left = 1;
    if (p.posted.size() < members->second.size()) return;
    PendingCollective ready = std::move(p);
    pending_collectives_.erase({op.group, op.seq});
    launch_collective(members->second, std::move(ready));
  }

  void launch_collective(const std::vector<int>& members, PendingCollective p) {
    // Timing slots of the members in group-rank order.
    std::vector<std::pair<int, std::size_t>> slots(members.size());
    for (const auto& [rank, timing] : p.posted) {
      const auto pos = std::lower_bound(members.begin(), members.end(), rank) - members.begin();
      slots[static_cast<std::size_t>(pos)] = {rank, timing};
    }
    for (const auto& [rank, timing] : slots) comm_timing(rank, timing).start = engine_.now();
    if (members.size() == 1) {  // nothing to exchange
      engine_.schedule_at(engine_.now(), [this, slots] { part_done(slots[0].first); });
      return;
    }
    CollectiveCall call;
    call.kind = collective_kind(p.kind);
    call.bytes = static_cast<double>(p.bytes);
    for (const auto& [rank, timing] : slots) call.ranks.push_back(state(rank).device);
    call.algorithm =
        p.kind == CommKind::barrier ? "auto" : options_.algorithm[static_cast<std::size_t>(call.kind)];
    call.protocol = options_.protocol;
    try {
      auto done = [this, slots](const CollectiveResult& res) { collective_done(slots, res); };
      // A collective of every rank holds every comm stream until it ends: with nothing in flight
      // now, nothing else moves on the network while it runs, so it may be folded to one node.
      if (members.size() == ranks_.size() && network_->stats().in_flight() == 0)
        collectives_.start_alone(call, std::move(done));
      else
        collectives_.start(call, std::move(done));
    } catch (const InputError& e) {
      // The collective API names its own arguments; those are the config's collectives.<kind> / .protocol.
      if (e.where() == "protocol") throw e.at(options_.algorithm_where + ".protocol");
      if (e.where() == "algorithm")
        throw e.at(options_.algorithm_where + "." + std::string(rt::comm_kind_name(call.kind)));
      throw;
    }
  }

  void collective_done(const std::vector<std::pair<int, std::size_t>>& slots, const CollectiveResult& res) {
    const int algo = algorithm_index(res.algorithm);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      CommTiming& t = comm_timing(slots[i].first, slots[i].second);
      t.bytes_sent = res.bytes_sent[i];
      t.algorithm = algo;
      t.protocol = res.protocol;
    }
    // Members end in group order at the same instant (the call's last arrival), or after unpacking.
    for (const auto& [rank, timing] : slots) {
      const auto& op = std::get<CommOp>(record(rank, comm_timing(rank, timing).record));
      if (op.unpack_bytes() == 0)
        part_done(rank);
      else
        engine_.schedule_at(engine_.now() + staging_copy(op.unpack_bytes()),
                            [this, r = rank] { part_done(r); });
    }
  }

  int algorithm_index(const std::string& name) {
    auto& names = result_.algorithms;
    const auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) return static_cast<int>(it - names.begin());
    names.push_back(name);
    return static_cast<int>(names.size()) - 1;
  }

  // ---- point-to-point ---------------------------------------------------------------------------

  void post_p2p(int r, const CommOp& op) {
    RankState& s = state(r);
    const bool sends = op.kind != CommKind::recv, receives = op.kind != CommKind::send;
    s.parts_left = (sends ? 1 : 0) + (receives ? 1 : 0);
    CommTiming& t = s.comm_live.front().timing;
    t.protocol = p2p_protocol_;
    // Register the receive first: a message to oneself may then complete it.
    if (receives) {
      const MessageKey key{op.group, op.src, r, op.tag, op.recv_seq};
      auto& inbox = s.inbox;
      const auto it = find_inbound(inbox, key);
      if (it != inbox.end()) {  // arrived before the receive
        take_inbound(inbox, it);
        engine_.schedule_at(engine_.now(), [this, r] { part_done(r); });
      } else {
        inbox.push_back({key, false});
      }
    }
    if (sends) send(r, op);
  }

  void send(int r, const CommOp& op) {
    if (op.dst < 0 || static_cast<std::size_t>(op.dst) >= ranks_.size())
      throw RuntimeError("replay: rank " + std::to_string(r) + " sends to rank " + std::to_string(op.dst) +
                         " of a world of " + std::to_string(ranks_.size()));
    const MessageKey key{op.group, r, op.dst, op.tag, op.seq};
    RankState& s = state(r);
    if (op.dst != r) s.comm_live.front().timing.bytes_sent = static_cast<double>(op.bytes);
    if (s.path_dst != op.dst) {
      s.path_device = state(op.dst).device;
      s.path = collectives_.send_path(s.device, s.path_device);
      s.path_dst = op.dst;
    }
    collectives_.send(s.path, s.device, s.path_device, static_cast<double>(op.bytes), p2p_protocol_,
                      [this, r, key] {
                        arrive(key);
                        part_done(r);
                      },
                      {&touch_message, &ranks_[static_cast<std::size_t>(r)],
                       static_cast<std::uint32_t>(op.dst - r)});
  }

  // EventTouches::touch of a message's end (stage 0 only): the sender's state, whose address is
  // `sender`, and the receiver's, `offset` (the receiver's rank less the sender's, modulo 2^32) states
  // further on.
  static void touch_message(const void* sender, std::uint32_t offset, int /*stage*/) {
    const auto* s = static_cast<const RankState*>(sender);
    prefetch_lines(s, sizeof *s);
    prefetch_lines(s + static_cast<std::int32_t>(offset), sizeof *s);
  }

  void arrive(const MessageKey& key) {
    const int receiver = std::get<2>(key);
    auto& inbox = state(receiver).inbox;
    const auto it = find_inbound(inbox, key);
    if (it == inbox.end()) {  // not received yet
      inbox.push_back({key, true});
      return;
    }
    take_inbound(inbox, it);
    part_done(receiver);
  }

  static std::vector<Inbound>::iterator find_inbound(std::vector<Inbound>& inbox, const MessageKey& key) {
    for (auto it = inbox.end(); it != inbox.begin();)
      if ((--it)->key == key) return it;
    return inbox.end();
  }
  static void take_inbound(std::vector<Inbound>& inbox, std::vector<Inbound>::iterator it) {
    *it = inbox.back();
    inbox.pop_back();
  }

  // ---- end of run ---------------------------------------------------------------------------------

  void check_finished(int r) {
    RankState& s = state(r);
    auto stuck = [&](std::size_t rec, const std::string& why) {
      std::string what = "record " + std::to_string(rec);
      const rt::trace::Record* at = s.records->at(rec);
      if (const auto* op = at != nullptr ? std::get_if<CommOp>(at) : nullptr)
        what += " (" + std::string(comm_kind_name(op->kind)) + ")";
      throw RuntimeError("replay: rank " + std::to_string(r) + " cannot finish: " + what + " " + why);
    };
    if (s.comm_active) stuck(s.comm_live.front().timing.record, "never completes (a peer never posts the matching op)");
    if (!s.comm_queue.empty()) stuck(s.comm_queue.front().record, "never starts");
    if (s.blocked_on != kNone) stuck(s.cursor - 1, "(a Wait) never returns");
    if (s.records->at(s.cursor) != nullptr) stuck(s.cursor, "is never reached (host blocked)");
  }

  Engine engine_;
  std::unique_ptr<Network> network_;
  Collectives collectives_;
  const ComputeModel& model_;
  const ReplayOptions& options_;
  Protocol p2p_protocol_;
  std::unordered_map<GroupId, std::vector<int>> groups_;
  std::vector<RankState> ranks_;
  std::map<std::pair<GroupId, std::uint64_t>, PendingCollective> pending_collectives_;
  ReplayResult result_;
};

}  // namespace

ReplayResult replay(std::span<const rt::trace::RankTrace> traces, const Cluster& cluster, NetworkMode mode,
                    const ComputeModel& model, const ReplayOptions& options) {
  if (traces.size() > cluster.gpus().size())
    throw std::invalid_argument("replay: " + std::to_string(traces.size()) + " ranks on a cluster of " +
                                std::to_string(cluster.gpus().size()) + " GPUs");
  const auto groups = rt::trace::merge_groups(traces);  // checks every table before anything runs
  std::vector<WholeTrace> whole(traces.begin(), traces.end());
  std::vector<RankRecords*> ranks;
  for (auto& w : whole) ranks.push_back(&w);
  return Replayer(ranks, groups, cluster, mode, model, options).run();
}

ReplayResult replay(std::span<RankRecords* const> ranks, const Cluster& cluster, NetworkMode mode,
                    const ComputeModel& model, const ReplayOptions& options) {
  if (ranks.size() > cluster.gpus().size())
    throw std::invalid_argument("replay: " + std::to_string(ranks.size()) + " ranks on a cluster of " +
                                std::to_string(cluster.gpus().size()) + " GPUs");
  return Replayer(ranks, {}, cluster, mode, model, options).run();
}

}  // namespace spsim::sim

namespace spsim::sim {

StreamBusy stream_busy(const RankTimeline& tl) {
  StreamBusy b;
  for (const auto& c : tl.compute) b.compute += c.end - c.start;
  // Both streams are serial, so their intervals are disjoint and sorted: one merge pass gives the
  // overlap of every comm interval with the compute intervals.
  std::size_t ci = 0;
  for (const auto& m : tl.comm) {
    const Time len = m.end - m.ready;
    b.comm += len;
    Time covered{};
    while (ci < tl.compute.size() && tl.compute[ci].end <= m.ready) ++ci;
    for (std::size_t k = ci; k < tl.compute.size() && tl.compute[k].start < m.end; ++k) {
      const Time lo = std::max(tl.compute[k].start, m.ready), hi = std::min(tl.compute[k].end, m.end);
      if (hi > lo) covered += hi - lo;
    }
    b.exposed_comm += len - covered;
  }
  return b;
}


}  // namespace spsim::sim
