// The per-rank Recorder.
#include "runtime/trace/trace.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace spsim::rt::trace {

struct Recorder::State {
  RankTrace trace;
  std::shared_ptr<ShapeTable> shapes;
  std::map<GroupId, std::uint64_t> collective_seq;
  std::map<std::tuple<GroupId, int, int, int>, std::uint64_t> p2p_seq;
};

Recorder::Recorder(int rank, DType dtype, std::shared_ptr<ShapeTable> shapes)
    : state_(std::make_shared<State>()) {
  state_->trace.rank = rank;
  state_->trace.dtype = dtype;
  state_->shapes = shapes ? std::move(shapes) : std::make_shared<ShapeTable>();
  state_->trace.shapes = state_->shapes;
}

const OpShapes* Recorder::intern(OpShapes shapes) {
  return state_->shapes->intern(std::move(shapes));
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

void Recorder::reserve(std::size_t records) {
  state_->trace.records.reserve(records);
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
  state_->trace.shapes = state_->shapes;
  return out;
}

}  // namespace spsim::rt::trace
