// Engine: the deterministic discrete-event queue every simulated component schedules callbacks on.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/time.hpp"

namespace spsim::sim {

// Events run in order of (time, insertion sequence): two events at the same picosecond run in the
// order they were scheduled, so a run is a pure function of its inputs. There is no global clock;
// every component receives the Engine it schedules on. Not thread-safe (one simulation per thread).
class Engine {
 public:
  using Callback = std::function<void()>;

  [[nodiscard]] Time now() const { return now_; }
  // Runs `cb` at absolute time `at` (>= now(); scheduling in the past throws std::logic_error).
  void schedule_at(Time at, Callback cb);
  void schedule_after(Time delay, Callback cb) { schedule_at(now_ + delay, std::move(cb)); }

  // Runs events until the queue is empty; returns how many ran.
  std::uint64_t run();
  // Runs the events at times <= `until`, then advances the clock to `until` (if it is ahead).
  std::uint64_t run_until(Time until);
  // Runs the single next event; false when the queue is empty.
  bool step();

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t pending() const { return queue_.size(); }

 private:
  struct Event {
    Time at;
    std::uint64_t seq;
    Callback cb;
  };
  // Heap order: the earliest (time, seq) on top.
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  std::vector<Event> queue_;
  Time now_{};
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace spsim::sim
