// Engine: the deterministic discrete-event queue every simulated component schedules callbacks on.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/callback.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

// Events run in order of (time, insertion sequence): two events at the same picosecond run in the
// order they were scheduled, so a run is a pure function of its inputs. The queue is an indexed
// 4-ary heap of (time, sequence, slot), so a pending event can be cancelled or moved in O(log n); an
// event scheduled for the current instant skips the heap for a first-in-first-out list (it runs after
// every event already queued for this instant, which are the heap's entries at this time and the
// list's earlier ones): many of a replay's events are such (deferred flow re-solves, messages that
// had arrived before their receive). There is no global clock; every component receives the Engine it
// schedules on. Not thread-safe (one simulation per thread).
// Engine::schedule_at's prefetch hint (see there).
struct EventTouches {
  const void* first = nullptr;
  const void* second = nullptr;
};

class Engine {
 public:
  using Callback = sim::Callback;  // move-only; small captures inline (callback.hpp)
  // Names one scheduled event, for cancel(). A default EventId names none.
  struct EventId {
    std::uint32_t slot = 0, generation = 0;  // generation 0: none
  };

  [[nodiscard]] Time now() const { return now_; }
  // Runs `cb` at absolute time `at` (>= now(); scheduling in the past throws std::logic_error).
  // The state a callback will work on first (a rank's, a flow's), if given: while the event before it
  // runs, the engine asks the memory for it and for the callback (a prefetch, which changes no result):
  // four cache lines from `first`, two from `second`. At thousands of ranks the events go from one
  // rank's state to another's, each out of the caches, and the wait for memory is most of an event's time.
  using Touches = EventTouches;
  EventId schedule_at(Time at, Callback cb, Touches touches = {});
  EventId schedule_after(Time delay, Callback cb, Touches touches = {}) {
    return schedule_at(now_ + delay, std::move(cb), touches);
  }
  // Removes a pending event (its callback never runs); a no-op for one that ran or was cancelled.
  // A flow whose rate changes replaces its completion event this way, so the queue holds one event
  // per flow instead of one per rate change.
  void cancel(EventId id);
  // Moves a pending event to `at` (>= now()), as cancel() and a schedule_at() of its callback would:
  // it runs after every event already scheduled for `at`. The id stays valid unless `at` is now() or
  // the event was scheduled for now(), where a new id is returned. A kernel or flow whose rate changes
  // moves its end this way, without giving up its slot or moving its callback.
  EventId reschedule(EventId id, Time at);
  // Whether `id` names an event that has neither run nor been cancelled.
  [[nodiscard]] bool is_pending(EventId id) const {
    return id.generation != 0 && id.slot < slots_.size() && slots_[id.slot].generation == id.generation;
  }

  // Runs events until the queue is empty; returns how many ran.
  std::uint64_t run();
  // Runs the events at times <= `until`, then advances the clock to `until` (if it is ahead).
  std::uint64_t run_until(Time until);
  // Runs the single next event; false when the queue is empty.
  bool step();

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t pending() const { return heap_.size() + instant_live_; }

 private:
  // The heap holds small entries; callbacks stay in their slot until they run.
  struct Entry {
    Time at;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  // A slot's bookkeeping, apart from its callback: a sift moves entries and rewrites their slots'
  // heap_index, so these sit densely (8 bytes a slot) rather than beside 72-byte callbacks.
  struct Slot {
    std::uint32_t generation = 0;  // odd while scheduled
    std::uint32_t heap_index = 0;  // kInInstant: in instant_ (the current instant's list) instead
  };
  // An entry of the current instant's list: the slot, and its generation when it was queued (a
  // cancelled entry stays in the list and is skipped: its slot's generation has moved on).
  struct InstantEntry {
    std::uint32_t slot, generation;
  };
  static constexpr std::uint32_t kInInstant = 0xffffffff;
  [[nodiscard]] static bool earlier(const Entry& a, const Entry& b) {
    return a.at != b.at ? a.at < b.at : a.seq < b.seq;
  }
  void place(std::size_t i, Entry e);  // heap_[i] = e, keeping the slot's index
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void remove_at(std::size_t i);
  [[nodiscard]] std::uint32_t take_slot();
  void release_slot(std::uint32_t slot);  // after its callback has run or been dropped
  void run_slot(std::uint32_t slot, Time at);

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<Callback> callbacks_;  // by slot
  std::vector<Touches> touches_;  // by slot: schedule_at's `touches`
  void prefetch_next() const;         // the callback and state of the event that runs next, as things stand
  std::vector<std::uint32_t> free_slots_;
  std::vector<InstantEntry> instant_;  // events scheduled for now_ while it was the current time, in order
  std::size_t instant_head_ = 0;       // next entry of instant_ to run
  std::size_t instant_live_ = 0;       // entries of instant_ not yet run or cancelled
  Time now_{};
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace spsim::sim
