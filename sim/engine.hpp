// Engine: the deterministic discrete-event queue every simulated component schedules callbacks on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/callback.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

// Events run in order of (time, insertion sequence): two events at the same picosecond run in the
// order they were scheduled, so a run is a pure function of its inputs. Events for a later time wait
// in a 4-ary heap of keys ordered by (time, sequence number); a key holds one event, or a bucket: a
// run of events of one time in the order they were scheduled. The first event for a time gets a key of
// its own; the second turns that key into a bucket of the two (same place in the heap), and the next
// ones join the bucket, found through a direct-mapped table of recent times; a time the table has
// forgotten gets a new key, after the old ones. An event scheduled for the current time goes to the
// instant's list, after the keys of this time (all queued before the clock got here). Each event thus
// runs after every event already scheduled for its time, which is (time, sequence) order. In a large
// replay most events share their time with others (a ring step's ranks and flows end together: 94% of
// a USP run's events run at the time of the event before them), so the heap holds far fewer keys than
// events, and a bucket's events sit side by side; a replay whose events mostly have times of their own
// pays one key per event, as a plain heap would. A cancelled or moved event with a key of its own
// takes it out or moves it (the key's place is kept by slot); one in a bucket or the instant's list
// leaves its entry behind, skipped when it comes up. There is no global clock; every component
// receives the Engine it schedules on. Not thread-safe (one simulation per thread).
// Engine::schedule_at's prefetch hint (see there): `touch(owner, index, stage)` asks the memory for the
// state an event's callback will work on (a rank's, a flow's) and changes nothing. Stage 0 asks for
// the lines reached from `owner` and `index` alone; stage 1, called an event later, reads those lines
// (in the caches by then) and asks for what they point to. `owner` must outlive the event; `index` may
// name state that has since been reused (the hint is then wasted, never wrong).
struct EventTouches {
  void (*touch)(const void* owner, std::uint32_t index, int stage) = nullptr;
  const void* owner = nullptr;
  std::uint32_t index = 0;
};

// Asks the memory for every cache line of [p, p + bytes) (for EventTouches::touch).
inline void prefetch_lines(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
  __builtin_prefetch(c + bytes - 1);
}

class Engine {
 public:
  using Callback = sim::Callback;  // move-only; small captures inline (callback.hpp)
  // Names one scheduled event, for cancel(). A default EventId names none.
  struct EventId {
    std::uint32_t slot = 0, generation = 0;  // generation 0: none
  };

  [[nodiscard]] Time now() const { return now_; }
  // Runs `cb` at absolute time `at` (>= now(); scheduling in the past throws std::logic_error).
  // The state a callback will work on (a rank's, a flow's), if given: with set_touch_ahead on, the
  // engine asks the memory for the callbacks of the next two events, and calls `touches` at stage 0
  // two events ahead and at stage 1 one event ahead (a prefetch, which changes no result). At
  // thousands of ranks the events go from one rank's state to another's, each out of the caches, and
  // the wait for memory is most of an event's time; a chain of two loads (a flow, then its links'
  // lists) is fetched over two events instead of waited for twice.
  using Touches = EventTouches;
  // Whether the engine calls the events' touches (off by default: it then asks only for the next
  // event's callback). They pay when a simulation's state has outgrown the caches, and cost their own
  // work when it has not; the replay turns them on for large worlds (replay.cpp).
  void set_touch_ahead(bool on) { touch_ahead_ = on; }
  EventId schedule_at(Time at, Callback cb, Touches touches = {});
  EventId schedule_after(Time delay, Callback cb, Touches touches = {}) {
    return schedule_at(now_ + delay, std::move(cb), touches);
  }
  // Removes a pending event (its callback never runs); a no-op for one that ran or was cancelled.
  // A flow whose rate changes replaces its completion event this way, so the queue holds one event
  // per flow instead of one per rate change.
  void cancel(EventId id);
  // Moves a pending event to `at` (>= now()), as cancel() and a schedule_at() of its callback would:
  // it runs after every event already scheduled for `at`. Returns the event's id from now on (`id`
  // no longer names it). A kernel or flow whose rate changes moves its end this way, keeping its slot
  // and callback.
  [[nodiscard]] EventId reschedule(EventId id, Time at);
  // Whether `id` names an event that has neither run nor been cancelled.
  [[nodiscard]] bool is_pending(EventId id) const {
    return id.generation != 0 && id.slot < generation_.size() && generation_[id.slot] == id.generation;
  }

  // Runs events until the queue is empty; returns how many ran.
  std::uint64_t run();
  // Runs the events at times <= `until`, then advances the clock to `until` (if it is ahead).
  std::uint64_t run_until(Time until);
  // Runs the single next event; false when the queue is empty.
  bool step();

  [[nodiscard]] std::uint64_t events_processed() const { return processed_; }
  [[nodiscard]] std::size_t pending() const { return live_; }

 private:
  // An event in a bucket: stale once its slot's generation has moved on (it ran, was cancelled or was
  // moved).
  struct Entry {
    std::uint32_t slot, generation;
  };
  // Events scheduled for one time, in the order they were; `head` is the next to run.
  struct Bucket {
    Time at;
    std::vector<Entry> entries;
    std::size_t head = 0;
  };
  // The heap's element, ordered by (at, seq): one event (`id` its slot, `generation` its generation;
  // never stale: cancel and reschedule take it out or move it) or, with `generation` 0, the bucket `id`.
  struct Key {
    Time at;
    std::uint64_t seq;
    std::uint32_t id;
    std::uint32_t generation;
  };
  // A slot of the table of recent times: `at`'s last key, the bucket `bucket`, or else the lone key
  // of the event in slot `lone` (if that event's key is still for `at`: it may have moved).
  static constexpr std::uint32_t kNone = 0xffffffff;
  struct Recent {
    Time at = Time::ps(-1);
    std::uint32_t bucket = kNone;
    std::uint32_t lone = kNone;
  };
  static constexpr std::size_t kRecent = 4096;  // a power of two

  [[nodiscard]] static bool earlier(const Key& a, const Key& b);  // in (at, seq) order
  void enqueue(Time at, std::uint32_t slot, std::uint32_t generation);
  [[nodiscard]] static std::size_t recent_slot(Time at);
  [[nodiscard]] const Key* peek();  // the next event's key after dropping stale and spent ones
  void pop_key();                   // removes the heap's first key (a bucket's: frees the bucket)
  void run_first_key();             // runs the first key's event (peek() has found it live)
  [[nodiscard]] bool instant_pending();  // a live entry in the instant's list (stale ones dropped)
  void push_key(const Key& key);
  void remove_key(std::size_t i);  // a lone key, cancelled or moved to the instant's list
  void place(std::size_t i, const Key& key);  // keys_[i] = key, keeping a lone key's position
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  [[nodiscard]] std::uint32_t new_bucket(Time at);
  [[nodiscard]] std::uint32_t take_slot();
  void release_slot(std::uint32_t slot);  // after its callback has run or been dropped
  void run_slot(std::uint32_t slot, Time at);
  void prefetch_ahead() const;  // stage 1 of the next event, stage 0 of the one after, as things stand

  std::vector<Key> keys_;        // 4-ary min-heap on (at, seq)
  std::vector<Bucket> buckets_;  // by index; freed ones are reused
  std::vector<std::uint32_t> free_buckets_;
  std::vector<Recent> recent_ = std::vector<Recent>(kRecent);
  // Events scheduled for now() while it was the current time, in order: after every key of this time.
  std::vector<Entry> instant_;
  std::size_t instant_head_ = 0;
  std::uint64_t next_seq_ = 0;
  std::vector<std::uint32_t> generation_;  // by slot: odd while an event is scheduled in it
  // By slot: where in keys_ the slot's lone key is, or kNotLone (its event is in a bucket or the
  // instant's list, or none is scheduled). Lone keys are never stale: cancel and reschedule move them.
  static constexpr std::uint32_t kNotLone = 0xffffffff;
  std::vector<std::uint32_t> pos_;
  std::vector<Callback> callbacks_;        // by slot
  std::vector<Touches> touches_;           // by slot: schedule_at's `touches`
  std::vector<std::uint32_t> free_slots_;
  std::size_t live_ = 0;  // events pending
  bool touch_ahead_ = false;
  Time now_{};
  std::uint64_t processed_ = 0;
};

}  // namespace spsim::sim
