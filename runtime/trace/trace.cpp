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
  std::size_t drained = 0;  // records handed on by drain(): the index of records.front()
  std::size_t chunk = 0;    // streaming: call `full` when the log holds this many (0: never)
  std::function<void()> full;
  bool discarding = false;
  bool fold_memory = false;  // Alloc/Free summed into live/peak, not logged
  std::uint64_t live = 0, peak = 0;
};

Recorder::Recorder(int rank, DType dtype, std::shared_ptr<ShapeTable> shapes)
    : state_(std::make_shared<State>()) {
  state_->trace.rank = rank;
  state_->trace.dtype = dtype;
  state_->shapes = shapes ? std::move(shapes) : std::make_shared<ShapeTable>();
  state_->trace.shapes = state_->shapes;
}

const OpShapes* Recorder::intern(std::span<const Shape* const> operands, const KernelShapes& kernels) {
  return state_->shapes->intern(operands, kernels);
}

std::string_view Recorder::name(std::string_view text) { return state_->shapes->name(text); }

int Recorder::rank() const {
  return state_->trace.rank;
}
DType Recorder::dtype() const {
  return state_->trace.dtype;
}

std::size_t Recorder::add(Record record) {
  State& st = *state_;
  if (st.discarding) return st.drained++;
  if (st.fold_memory) {
    if (const auto* a = std::get_if<Alloc>(&record)) {
      st.live += a->bytes;
      st.peak = std::max(st.peak, st.live);
      return st.drained + st.trace.records.size();
    }
    if (const auto* f = std::get_if<Free>(&record)) {
      st.live -= f->bytes;
      return st.drained + st.trace.records.size();
    }
  }
  st.trace.records.push_back(std::move(record));
  const std::size_t index = st.drained + st.trace.records.size() - 1;
  if (st.chunk != 0 && st.trace.records.size() >= st.chunk) st.full();
  return index;
}

void Recorder::stream_to(std::size_t chunk, std::function<void()> full) {
  state_->chunk = chunk;
  state_->full = std::move(full);
}

void Recorder::drain(std::vector<Record>& out) {
  auto& records = state_->trace.records;
  state_->drained += records.size();
  if (out.empty()) {
    std::swap(out, records);  // the log keeps the capacity `out` had
  } else {
    out.insert(out.end(), std::make_move_iterator(records.begin()), std::make_move_iterator(records.end()));
  }
  records.clear();
}

void Recorder::fold_memory() {
  state_->fold_memory = true;
}

std::uint64_t Recorder::peak_bytes() const {
  return state_->peak;
}

void Recorder::discard() {
  state_->discarding = true;
  state_->chunk = 0;
  state_->trace.records.clear();
}

const std::vector<Group>& Recorder::groups() const {
  return state_->trace.groups;
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
