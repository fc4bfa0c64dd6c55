// Live-bytes walk over a rank's Alloc/Free records.
#include "sim/memory/memory.hpp"

#include <variant>

namespace spsim::sim {

MemoryProfile memory_profile(const rt::trace::RankTrace& trace, std::span<const Time> issue_time, bool curve) {
  MemoryProfile out;
  std::uint64_t live = 0;
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    const auto& r = trace.records[i];
    if (const auto* a = std::get_if<rt::trace::Alloc>(&r)) {
      live += a->bytes;
      if (live > out.peak_bytes) {
        out.peak_bytes = live;
        out.peak_record = i;
      }
    } else if (const auto* f = std::get_if<rt::trace::Free>(&r)) {
      live -= f->bytes;
    } else {
      continue;
    }
    if (curve) out.curve.push_back({i < issue_time.size() ? issue_time[i] : Time{}, live});
  }
  out.end_bytes = live;
  return out;
}

}  // namespace spsim::sim
