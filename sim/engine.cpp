// Engine: binary heap of (time, sequence) events.
#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>

namespace spsim::sim {

void Engine::schedule_at(Time at, Callback cb) {
  if (at < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  queue_.push_back(Event{at, next_seq_++, std::move(cb)});
  std::push_heap(queue_.begin(), queue_.end(), Later{});
}

bool Engine::step() {
  if (queue_.empty()) return false;
  std::pop_heap(queue_.begin(), queue_.end(), Later{});
  Event ev = std::move(queue_.back());
  queue_.pop_back();
  now_ = ev.at;
  ++processed_;
  ev.cb();  // may schedule more events
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
  while (!queue_.empty() && queue_.front().at <= until) step();
  if (queue_.empty() || queue_.front().at > until) now_ = std::max(now_, until);
  return processed_ - before;
}

}  // namespace spsim::sim
