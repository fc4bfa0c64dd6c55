// trace_ranks: run an SPMD function once per rank on the trace backend and collect every rank's trace.
#pragma once

#include <functional>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::rt::trace {

// Runs fn(device, comm) for ranks 0..world_size-1 one after another, in this thread: a Comm call
// returns at once (no data moves), so no rank ever waits for another. Each rank gets a fresh
// TraceDevice(dtype) and world TraceComm sharing one Recorder. Result: element r is rank r's trace.
// Throws RuntimeError for world_size < 1; an exception from fn (a shape bug) propagates.
[[nodiscard]] std::vector<RankTrace> trace_ranks(int world_size, DType dtype,
                                                 const std::function<void(Device&, Comm&)>& fn);

}  // namespace spsim::rt::trace
