// Engine: an indexed 4-ary heap of (time, sequence) events.
#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace spsim::sim {

Engine::EventId Engine::schedule_at(Time at, Callback cb) {
  if (at < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  ++s.generation;  // odd: scheduled
  heap_.push_back({});
  place(heap_.size() - 1, Entry{at, next_seq_++, slot});
  sift_up(heap_.size() - 1);
  return {slot, s.generation};
}

void Engine::cancel(EventId id) {
  if (id.generation == 0 || id.slot >= slots_.size()) return;
  Slot& s = slots_[id.slot];
  if (s.generation != id.generation) return;  // ran or cancelled already
  remove_at(s.heap_index);
  s.cb = nullptr;
  ++s.generation;  // even: free
  free_slots_.push_back(id.slot);
}

void Engine::place(std::size_t i, Entry e) {
  slots_[e.slot].heap_index = static_cast<std::uint32_t>(i);
  heap_[i] = e;
}

// A 4-ary heap: half the levels of a binary one, and a node's four children share a cache line or
// two, so a pop touches fewer lines (the queue holds thousands of events in a large replay). Events
// are totally ordered by (time, sequence), so the order they run in does not depend on the arity.
constexpr std::size_t kArity = 4;

void Engine::sift_up(std::size_t i) {
  const Entry e = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!earlier(e, heap_[parent])) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void Engine::sift_down(std::size_t i) {
  const Entry e = heap_[i];
  const std::size_t n = heap_.size();
  while (true) {
    const std::size_t first = kArity * i + 1;
    if (first >= n) break;
    std::size_t child = first;
    const std::size_t last = std::min(first + kArity, n);
    for (std::size_t c = first + 1; c < last; ++c)
      if (earlier(heap_[c], heap_[child])) child = c;
    if (!earlier(heap_[child], e)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

void Engine::remove_at(std::size_t i) {
  const std::size_t last = heap_.size() - 1;
  if (i != last) {
    place(i, heap_[last]);
    heap_.pop_back();
    sift_down(i);
    sift_up(i);
  } else {
    heap_.pop_back();
  }
}

bool Engine::step() {
  if (heap_.empty()) return false;
  const Entry top = heap_.front();
  remove_at(0);
  Slot& s = slots_[top.slot];
  Callback cb = std::move(s.cb);
  s.cb = nullptr;
  ++s.generation;
  free_slots_.push_back(top.slot);
  now_ = top.at;
  ++processed_;
  cb();  // may schedule more events
  return true;
}

std::uint64_t Engine::run() {
  const std::uint64_t before = processed_;
  while (step()) {
  }
  return processed_ - before;
}

std::uint64_t Engine::run_until(Time until) {
  const std::uint64_t before = processed_;
  while (!heap_.empty() && heap_.front().at <= until) step();
  if (heap_.empty() || heap_.front().at > until) now_ = std::max(now_, until);
  return processed_ - before;
}

}  // namespace spsim::sim
