// Trace format helpers: stream names, group ids, live-byte peaks and the merged group table.
#include "runtime/core/trace_format.hpp"

#include <algorithm>
#include <map>

namespace spsim::rt::trace {

std::string_view stream_name(Stream s) {
  return s == Stream::compute ? "compute" : "comm";
}

GroupId group_id(std::span<const int> members) {
  // FNV-1a over the bytes of each member (little-endian, 4 bytes), then the count, so that the
  // empty list and {0} differ. Offset basis and prime are FNV's published 64-bit constants.
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 4; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  for (int m : members) mix(static_cast<std::uint32_t>(m));
  mix(members.size());
  return h;
}

std::uint64_t peak_live_bytes(const RankTrace& trace) {
  std::uint64_t live = 0, peak = 0;
  for (const Record& r : trace.records) {
    if (const auto* a = std::get_if<Alloc>(&r)) {
      live += a->bytes;
      peak = std::max(peak, live);
    } else if (const auto* f = std::get_if<Free>(&r)) {
      live -= f->bytes;
    }
  }
  return peak;
}

std::vector<Group> merge_groups(std::span<const RankTrace> traces) {
  std::map<GroupId, Group> all;
  for (const RankTrace& t : traces)
    for (const Group& g : t.groups) {
      auto [it, inserted] = all.emplace(g.id, g);
      if (!inserted && it->second.members != g.members)
        throw RuntimeError("trace: rank " + std::to_string(t.rank) + " has group " + std::to_string(g.id) +
                           " with members that differ from another rank's");
    }
  std::vector<Group> out;
  for (auto& [id, g] : all) {
    for (int m : g.members) {
      const bool has = m >= 0 && static_cast<std::size_t>(m) < traces.size() &&
                       std::ranges::any_of(traces[static_cast<std::size_t>(m)].groups,
                                           [&](const Group& x) { return x.id == id; });
      if (!has)
        throw RuntimeError("trace: rank " + std::to_string(m) + " is a member of group " +
                           std::to_string(id) + " but its trace does not list it");
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace spsim::rt::trace
