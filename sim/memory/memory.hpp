// Memory tracking of a replayed rank: live bytes over the trace's Alloc/Free records, peak and OOM.
//
// The trace's allocations are stream-ordered (runtime/core/trace_format.hpp): each takes effect at its place
// in record order, so the peak is a property of the record order alone; the replay only supplies the
// time at which the host reached each record, for the memory curve. Everything the step touches is
// in the trace: inputs and weights are from_host allocations alive from the start. Allocator
// fragmentation and the CUDA context are not modelled, so the peak is a lower bound of what
// torch.cuda.max_memory_allocated would report.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/core/trace_format.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

struct MemoryPoint {
  Time at{};               // when the host reached the Alloc/Free record
  std::uint64_t live = 0;  // bytes live after it
};

struct MemoryProfile {
  std::uint64_t peak_bytes = 0;
  std::size_t peak_record = 0;     // index of the Alloc that reached the peak
  std::uint64_t end_bytes = 0;     // live when the trace ends (outputs, gradients, weights)
  std::vector<MemoryPoint> curve;  // one point per Alloc/Free, in record order
  [[nodiscard]] bool oom(double capacity_bytes) const {
    return static_cast<double>(peak_bytes) > capacity_bytes;
  }
};

// `issue_time[i]` is when record i was issued (replay's RankTimeline::issue); empty: all at time 0.
// Without `curve` only the peak and end are kept (the curve holds a point per Alloc/Free).
[[nodiscard]] MemoryProfile memory_profile(const rt::trace::RankTrace& trace,
                                           std::span<const Time> issue_time = {}, bool curve = true);

}  // namespace spsim::sim
