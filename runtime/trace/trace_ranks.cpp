// The sequential SPMD driver of the trace backend.
#include "runtime/trace/trace_ranks.hpp"

#include <string>

#include "runtime/trace/trace_comm.hpp"
#include "runtime/trace/trace_device.hpp"

namespace spsim::rt::trace {

TraceBudgetExceeded::TraceBudgetExceeded(double bytes_, int ranks_done_, int world_size_, double budget_)
    : std::runtime_error("trace budget exceeded"),
      bytes(bytes_),
      ranks_done(ranks_done_),
      world_size(world_size_),
      budget(budget_) {}

double trace_bytes(const RankTrace& trace) {
  double bytes = static_cast<double>(trace.records.capacity() * sizeof(Record));
  // A group's list may be shared with other ranks' (the world's): counted in full, an upper bound.
  for (const auto& g : trace.groups)
    bytes += static_cast<double>(sizeof(Group) + g.members.list().capacity() * sizeof(int));
  return bytes;
}

std::vector<RankTrace> trace_ranks(int world_size, DType dtype, const std::function<void(Device&, Comm&)>& fn,
                                   double budget_bytes) {
  if (world_size < 1) throw RuntimeError("trace_ranks: world size " + std::to_string(world_size) + " < 1");
  std::vector<RankTrace> traces;
  traces.reserve(static_cast<std::size_t>(world_size));
  double held = 0;
  const auto shapes = std::make_shared<ShapeTable>();  // one table for every rank's launch shapes
  for (int rank = 0; rank < world_size; ++rank) {
    const double table_before = shapes->bytes();
    Recorder recorder(rank, dtype, shapes);
    // SPMD ranks record about as many records as the one before: room for that and a 64th more
    // spares the doubling growth its copies and page faults (a rank holds ~10^4–10^6 records).
    if (rank > 0) {
      const std::size_t before = traces.back().records.size();
      recorder.reserve(before + before / 64);
    }
    {
      TraceDevice device(dtype, recorder);
      TraceComm comm(rank, world_size, recorder);
      fn(device, comm);
    }
    traces.push_back(recorder.take());
    auto& records = traces.back().records;
    if (records.capacity() - records.size() > records.size() / 32) records.shrink_to_fit();
    held += trace_bytes(traces.back()) + (shapes->bytes() - table_before);
    if (held > budget_bytes) throw TraceBudgetExceeded(held, rank + 1, world_size, budget_bytes);
  }
  return traces;
}

}  // namespace spsim::rt::trace
