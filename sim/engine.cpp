// Engine: an indexed 4-ary heap of (time, sequence) events.
#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace spsim::sim {

std::uint32_t Engine::take_slot() {
  if (free_slots_.empty()) {
    slots_.emplace_back();
    callbacks_.emplace_back();
    touches_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }
  const std::uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void Engine::release_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  callbacks_[slot] = nullptr;
  ++s.generation;  // even: free
  free_slots_.push_back(slot);
}

Engine::EventId Engine::schedule_at(Time at, Callback cb, Touches touches) {
  if (at < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  const std::uint32_t slot = take_slot();
  Slot& s = slots_[slot];
  callbacks_[slot] = std::move(cb);
  touches_[slot] = touches;
  ++s.generation;  // odd: scheduled
  ++next_seq_;     // the sequence orders heap entries; the instant's list is in order by construction
  if (at == now_) {
    // After every event already queued for this instant: the heap's entries at this time were all
    // scheduled before the clock reached it, and the list's earlier entries before this one.
    s.heap_index = kInInstant;
    instant_.push_back({slot, s.generation});
    ++instant_live_;
  } else {
    heap_.push_back({});
    place(heap_.size() - 1, Entry{at, next_seq_ - 1, slot});
    sift_up(heap_.size() - 1);
  }
  return {slot, s.generation};
}

void Engine::cancel(EventId id) {
  if (!is_pending(id)) return;  // ran or cancelled already
  Slot& s = slots_[id.slot];
  if (s.heap_index == kInInstant)
    --instant_live_;  // its list entry stays, skipped by its stale generation
  else
    remove_at(s.heap_index);
  release_slot(id.slot);
}

Engine::EventId Engine::reschedule(EventId id, Time at) {
  if (!is_pending(id)) throw std::logic_error("Engine::reschedule: the event is not pending");
  if (at < now_) throw std::logic_error("Engine::reschedule: time is in the past");
  Slot& s = slots_[id.slot];
  if (at == now_ || s.heap_index == kInInstant) {  // into or out of the instant's list: a new entry
    Callback cb = std::move(callbacks_[id.slot]);
    const Touches touches = touches_[id.slot];
    cancel(id);
    return schedule_at(at, std::move(cb), touches);
  }
  // The same key a cancel and a schedule_at would give it: (at, the next sequence number).
  const std::size_t i = s.heap_index;
  const Entry old = heap_[i];
  heap_[i] = Entry{at, next_seq_++, id.slot};
  if (earlier(heap_[i], old))
    sift_up(i);
  else
    sift_down(i);
  return id;
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

void Engine::prefetch_next() const {
  std::uint32_t next = 0;
  if (instant_head_ < instant_.size())
    next = instant_[instant_head_].slot;
  else if (!heap_.empty())
    next = heap_.front().slot;
  else
    return;
  const auto* cb = reinterpret_cast<const char*>(&callbacks_[next]);
  __builtin_prefetch(cb);
  __builtin_prefetch(cb + sizeof(Callback) - 1);
  if (const auto* first = static_cast<const char*>(touches_[next].first))
    for (int line = 0; line < 4; ++line) __builtin_prefetch(first + 64 * line);
  if (const auto* second = static_cast<const char*>(touches_[next].second)) {
    __builtin_prefetch(second);
    __builtin_prefetch(second + 64);
  }
}

void Engine::run_slot(std::uint32_t slot, Time at) {
  Callback cb = std::move(callbacks_[slot]);
  release_slot(slot);
  now_ = at;
  ++processed_;
  prefetch_next();
  cb();  // may schedule more events
}

bool Engine::step() {
  // The heap's entries at the current time were scheduled before the instant's list's: they go first.
  if (!heap_.empty() && heap_.front().at == now_) {
    const Entry top = heap_.front();
    remove_at(0);
    run_slot(top.slot, top.at);
    return true;
  }
  while (instant_head_ < instant_.size()) {
    const InstantEntry e = instant_[instant_head_++];
    if (slots_[e.slot].generation != e.generation) continue;  // cancelled (or moved) since queued
    --instant_live_;
    run_slot(e.slot, now_);
    return true;
  }
  instant_.clear();  // every entry has run or was cancelled: the clock may move on
  instant_head_ = 0;
  if (heap_.empty()) return false;
  const Entry top = heap_.front();
  remove_at(0);
  run_slot(top.slot, top.at);
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
  while ((instant_live_ > 0 && now_ <= until) || (!heap_.empty() && heap_.front().at <= until)) step();
  if (heap_.empty() || heap_.front().at > until) now_ = std::max(now_, until);
  return processed_ - before;
}

}  // namespace spsim::sim
