// Trace records, group ids and the per-rank Recorder.
#include "runtime/trace/trace.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace spsim::rt::trace {

std::string_view stream_name(Stream s) {
  return s == Stream::compute ? "compute" : "comm";
}

std::string_view comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::all_reduce:
      return "all_reduce";
    case CommKind::reduce_scatter:
      return "reduce_scatter";
    case CommKind::all_gather:
      return "all_gather";
    case CommKind::all_to_all:
      return "all_to_all";
    case CommKind::send:
      return "send";
    case CommKind::recv:
      return "recv";
    case CommKind::sendrecv:
      return "sendrecv";
    case CommKind::barrier:
      return "barrier";
  }
  return "?";
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

struct Recorder::State {
  RankTrace trace;
  std::map<GroupId, std::uint64_t> collective_seq;
  std::map<std::tuple<GroupId, int, int, int>, std::uint64_t> p2p_seq;
};

Recorder::Recorder(int rank, DType dtype) : state_(std::make_shared<State>()) {
  state_->trace.rank = rank;
  state_->trace.dtype = dtype;
}

int Recorder::rank() const {
  return state_->trace.rank;
}
DType Recorder::dtype() const {
  return state_->trace.dtype;
}

std::size_t Recorder::add(Record record) {
  state_->trace.records.push_back(std::move(record));
  return state_->trace.records.size() - 1;
}

void Recorder::add_group(const Group& group) {
  auto& groups = state_->trace.groups;
  if (std::ranges::none_of(groups, [&](const Group& g) { return g.id == group.id; })) groups.push_back(group);
}

std::uint64_t Recorder::next_collective_seq(GroupId group) {
  return state_->collective_seq[group]++;
}

std::uint64_t Recorder::next_p2p_seq(GroupId group, int src, int dst, int tag) {
  return state_->p2p_seq[{group, src, dst, tag}]++;
}

const std::vector<Record>& Recorder::records() const {
  return state_->trace.records;
}

RankTrace Recorder::take() {
  RankTrace out = std::move(state_->trace);
  state_->trace = RankTrace{};
  state_->trace.rank = out.rank;
  state_->trace.dtype = out.dtype;
  state_->trace.groups = out.groups;
  return out;
}

}  // namespace spsim::rt::trace
