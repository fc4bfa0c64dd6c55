// trace_ranks: run an SPMD function once per rank on the trace backend and collect every rank's trace.
#pragma once

#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::rt::trace {

// Runs fn(device, comm) for ranks 0..world_size-1 one after another, in this thread: a Comm call
// returns at once (no data moves), so no rank ever waits for another. Each rank gets a fresh
// TraceDevice(dtype) and world TraceComm sharing one Recorder. Result: element r is rank r's trace.
// Throws RuntimeError for world_size < 1; an exception from fn (a shape bug) propagates.
//
// `budget_bytes` bounds the memory the traces hold (records and their operand shapes, counted after
// each rank): past it, TraceBudgetExceeded, before the traces of a very large world exhaust the host.
[[nodiscard]] std::vector<RankTrace> trace_ranks(
    int world_size, DType dtype, const std::function<void(Device&, Comm&)>& fn,
    double budget_bytes = std::numeric_limits<double>::infinity());

class TraceBudgetExceeded : public std::runtime_error {
 public:
  TraceBudgetExceeded(double bytes, int ranks_done, int world_size, double budget);
  double bytes;    // held by the traces of the ranks done
  int ranks_done;  // ranks traced when the budget ran out
  int world_size;
  double budget;
};

// The memory one rank's trace holds, bytes (records, phase names, groups; the ShapeTable its ops
// share is counted once, by trace_ranks).
[[nodiscard]] double trace_bytes(const RankTrace& trace);

}  // namespace spsim::rt::trace
