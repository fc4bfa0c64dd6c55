// TraceStreams: every rank's trace produced as a consumer reads it, instead of all of them up front.
//
// trace_ranks holds every record of every rank at once: ranks × steps records (a 1,024-rank zigzag ring
// step is 41 M records, 3.6 GB). The replay reads each rank's records in order and is done with most of
// them soon after, so TraceStreams runs each rank's SPMD function on a thread of its own, paused inside
// the Recorder whenever `chunk` new records wait to be read, and resumed when the consumer pulls (a
// fiber; a thread in sanitizer builds). Only one runs at a time — the consumer or the one rank it pulls
// from — so the records and the shared ShapeTable come out as trace_ranks makes them, in an order the
// consumer alone decides: deterministic. A Comm call still returns at once, so no rank waits for another.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::rt::trace {

class TraceStreams {
 public:
  // fn(device, comm) is rank r's program, as for trace_ranks; it must outlive the streams. Threads start
  // at a rank's first pull (with `ahead`, at the first pull of any rank: see below). Throws
  // RuntimeError for world_size < 1 or chunk < 1.
  // `ahead`: one producer thread runs the ranks' fibers beside the consumer, each rank one chunk ahead
  // of what it was last pulled for (its next chunk is recorded while the consumer reads the one it
  // has), so recording costs the consumer only the hand-over. From the first pull it records every
  // rank's first chunk in rank order, the order a replay starts in, so ranks never pulled may start.
  // The records are the same either way: each rank's depend on its own program alone, and only the
  // producer runs programs (in sanitizer builds it hands the turn to the ranks' threads, as the
  // consumer does without it).
  TraceStreams(int world_size, DType dtype, std::function<void(Device&, Comm&)> fn, std::size_t chunk = 2048,
               bool ahead = false);
  // Ranks that have not finished run to their end recording nothing, one after another; then every
  // thread is joined.
  ~TraceStreams();
  TraceStreams(const TraceStreams&) = delete;
  TraceStreams& operator=(const TraceStreams&) = delete;

  [[nodiscard]] int size() const;
  // Runs rank r until it has recorded `chunk` more records or finished, and moves what it recorded to
  // the back of `out`; false once the rank has finished and nothing was left to move. An exception the
  // rank's program threw is rethrown here (a std::system_error if its stack or thread cannot be had).
  // Every pull of one TraceStreams comes from one thread.
  bool pull(int rank, std::vector<Record>& out);
  // The groups rank r has created as of its last pull (it creates a group before it records a
  // collective on it); with `ahead`, valid until rank r's next pull.
  [[nodiscard]] const std::vector<Group>& groups(int rank) const;
  // Before the first pull: every rank's Alloc and Free are summed, not recorded (Recorder::fold_memory).
  void fold_memory();
  // Rank r's peak live bytes (fold_memory), once pull(r) has returned false.
  [[nodiscard]] std::uint64_t peak_bytes(int rank) const;

 private:
  struct Rank;
  struct Shared;
  struct Producer;
  void produce();  // the producer thread's loop
  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<Producer> producer_;  // null: the consumer runs each rank when it pulls
};

}  // namespace spsim::rt::trace
