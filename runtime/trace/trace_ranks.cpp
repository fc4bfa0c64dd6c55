// The sequential SPMD driver of the trace backend.
#include "runtime/trace/trace_ranks.hpp"

#include <string>

#include "runtime/trace/trace_comm.hpp"
#include "runtime/trace/trace_device.hpp"

namespace spsim::rt::trace {

std::vector<RankTrace> trace_ranks(int world_size, DType dtype,
                                   const std::function<void(Device&, Comm&)>& fn) {
  if (world_size < 1) throw RuntimeError("trace_ranks: world size " + std::to_string(world_size) + " < 1");
  std::vector<RankTrace> traces;
  traces.reserve(static_cast<std::size_t>(world_size));
  for (int rank = 0; rank < world_size; ++rank) {
    Recorder recorder(rank, dtype);
    {
      TraceDevice device(dtype, recorder);
      TraceComm comm(rank, world_size, recorder);
      fn(device, comm);
    }
    traces.push_back(recorder.take());
  }
  return traces;
}

}  // namespace spsim::rt::trace
