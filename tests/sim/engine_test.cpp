// Tests of the event engine: ordering, tie-breaking by insertion, determinism, Time, and the events'
// move-only Callback.
#include "sim/engine.hpp"

#include "sim/callback.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using spsim::sim::Engine;
using spsim::sim::Time;

TEST_CASE("Time converts at the boundary and rounds to the nearest picosecond") {
  CHECK(Time::from_us(1.5).count_ps() == 1'500'000);
  CHECK(Time::from_seconds(2e-12).count_ps() == 2);
  CHECK(Time::from_seconds(2.4e-12).count_ps() == 2);  // nearest, not truncated or rounded up
  CHECK(Time::from_seconds(2.6e-12).count_ps() == 3);
  CHECK(Time::ns(3).count_ps() == 3000);
  CHECK((Time::ps(5) + Time::ps(7)).count_ps() == 12);
  CHECK((3 * Time::ps(5)).count_ps() == 15);
  CHECK(Time::from_us(2).us() == doctest::Approx(2.0));
}

TEST_CASE("events run in time order, ties in insertion order") {
  Engine e;
  std::vector<std::string> log;
  e.schedule_at(Time::ps(20), [&] { log.push_back("b20"); });
  e.schedule_at(Time::ps(10), [&] { log.push_back("a10"); });
  e.schedule_at(Time::ps(20), [&] { log.push_back("c20"); });
  e.schedule_at(Time::ps(10), [&] {
    log.push_back("d10");
    // Scheduled during the run at the current time: after everything already queued for t=10.
    e.schedule_after(Time{}, [&] { log.push_back("e10"); });
  });
  CHECK(e.run() == 5);
  CHECK(log == std::vector<std::string>{"a10", "d10", "e10", "b20", "c20"});
  CHECK(e.now() == Time::ps(20));
  CHECK(e.events_processed() == 5);
}

TEST_CASE("a cancelled event never runs; cancelling one that ran, or twice, changes nothing") {
  Engine e;
  std::vector<std::string> log;
  e.schedule_at(Time::ps(10), [&] { log.push_back("a"); });
  const Engine::EventId b = e.schedule_at(Time::ps(10), [&] { log.push_back("b"); });
  const Engine::EventId c = e.schedule_at(Time::ps(30), [&] { log.push_back("c"); });
  e.schedule_at(Time::ps(20), [&] { log.push_back("d"); });
  e.cancel(b);
  e.cancel(b);
  CHECK(e.pending() == 3);
  // The next event takes b's freed slot (slots are reused last freed first); b's id must not cancel it.
  const Engine::EventId f = e.schedule_at(Time::ps(25), [&] { log.push_back("f"); });
  CHECK(f.slot == b.slot);
  e.cancel(b);
  e.cancel(Engine::EventId{});
  CHECK(e.pending() == 4);
  CHECK(e.run_until(Time::ps(20)) == 2);
  CHECK(e.run() == 2);
  e.cancel(c);  // already ran
  CHECK(log == std::vector<std::string>{"a", "d", "f", "c"});
  // Cancelling from many places in a large heap keeps the rest in (time, insertion) order.
  std::vector<Engine::EventId> ids;
  std::vector<int> order;
  for (int i = 0; i < 200; ++i)
    ids.push_back(e.schedule_at(Time::ps(1000 + (i * 37) % 50), [&order, i] { order.push_back(i); }));
  for (int i = 0; i < 200; i += 3) e.cancel(ids[static_cast<std::size_t>(i)]);
  e.run();
  std::vector<int> want;
  for (int t = 0; t < 50; ++t)
    for (int i = 0; i < 200; ++i)
      if (i % 3 != 0 && (i * 37) % 50 == t) want.push_back(i);
  CHECK(order == want);
}

TEST_CASE("scheduling in the past is a logic error") {
  Engine e;
  e.schedule_at(Time::ps(5), [] {});
  e.run();
  CHECK_THROWS_AS(e.schedule_at(Time::ps(4), [] {}), std::logic_error);
}

TEST_CASE("run_until stops at the bound and advances the clock to it") {
  Engine e;
  int ran = 0;
  e.schedule_at(Time::ps(5), [&] { ++ran; });
  e.schedule_at(Time::ps(15), [&] { ++ran; });
  CHECK(e.run_until(Time::ps(10)) == 1);
  CHECK(e.now() == Time::ps(10));
  CHECK(e.pending() == 1);
  e.run();
  CHECK(ran == 2);
}

// A pseudo-random cascade (each event schedules children at random offsets, many of them equal)
// run twice from the same seed must produce the same sequence.
static std::vector<std::pair<std::int64_t, int>> cascade(unsigned seed) {
  Engine e;
  std::mt19937 rng(seed);
  std::vector<std::pair<std::int64_t, int>> log;
  int next_id = 0;
  std::function<void(int, int)> spawn = [&](int id, int depth) {
    log.emplace_back(e.now().count_ps(), id);
    if (depth == 0) return;
    for (int k = 0; k < 3; ++k) {
      const int child = ++next_id;
      e.schedule_after(Time::ps(static_cast<std::int64_t>(rng() % 4)),
                       [&, child, depth] { spawn(child, depth - 1); });
    }
  };
  e.schedule_at(Time{}, [&] { spawn(0, 6); });
  e.run();
  return log;
}

TEST_CASE("identical inputs give identical event sequences") {
  const auto a = cascade(7), b = cascade(7);
  CHECK(a.size() == 1 + 3 + 9 + 27 + 81 + 243 + 729);
  CHECK(a == b);
  for (std::size_t i = 1; i < a.size(); ++i) CHECK(a[i - 1].first <= a[i].first);  // time never goes back
}

TEST_CASE("a duration past the clock's limit is bad input, not an overflow") {
  CHECK(Time::from_seconds(1e6).count_ps() == 1000000000000000000);
  CHECK_THROWS_AS((void)Time::from_seconds(2e6), spsim::InputError);
  CHECK_THROWS_AS((void)Time::from_seconds(std::nan("")), spsim::InputError);
  CHECK_THROWS_AS((void)Time::from_us(1e13), spsim::InputError);
}

// A reference queue written out plainly: every pending event as (time, sequence, name), the next
// one found by a linear search for the least (time, sequence); cancel removes it; reschedule removes
// it and adds it again with the next sequence number. The engine (heap, instant list, in-place moves)
// must run the same events in the same order.
namespace {
struct Reference {
  struct Item {
    std::int64_t at;
    std::uint64_t seq;
    int name;
  };
  std::vector<Item> items;
  std::uint64_t seq = 0;
  void add(std::int64_t at, int name) { items.push_back({at, seq++, name}); }
  bool remove(int name) {
    for (auto it = items.begin(); it != items.end(); ++it)
      if (it->name == name) {
        items.erase(it);
        return true;
      }
    return false;
  }
  std::optional<Item> pop() {
    if (items.empty()) return std::nullopt;
    auto best = items.begin();
    for (auto it = items.begin(); it != items.end(); ++it)
      if (it->at < best->at || (it->at == best->at && it->seq < best->seq)) best = it;
    const Item out = *best;
    items.erase(best);
    return out;
  }
};
}  // namespace

TEST_CASE("cancel, reschedule and same-instant events run in the order of a plain reference queue") {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    Engine e;
    Reference ref;
    std::vector<Engine::EventId> ids;  // by name
    std::vector<std::pair<std::int64_t, int>> ran, want;
    int names = 0;
    // Each event, when it runs, schedules one to three more (often at the current instant, often at a
    // time already taken), cancels one pending event and moves another; the reference does the same.
    std::function<void(int)> body;
    auto add = [&](std::int64_t at) {
      const int name = names++;
      ids.push_back(e.schedule_at(Time::ps(at), [&body, name] { body(name); }));
      ref.add(at, name);
    };
    auto some_pending = [&]() -> int {
      std::vector<int> p;
      for (int n = 0; n < names; ++n)
        if (e.is_pending(ids[static_cast<std::size_t>(n)])) p.push_back(n);
      return p.empty() ? -1 : p[rng() % p.size()];
    };
    body = [&](int name) {
      ran.emplace_back(e.now().count_ps(), name);
      if (names > 400) return;
      const std::int64_t now = e.now().count_ps();
      for (unsigned k = 1 + rng() % 3; k > 0; --k) add(now + (rng() % 2 == 0 ? 0 : static_cast<std::int64_t>(rng() % 4)));
      if (const int c = some_pending(); c >= 0 && rng() % 3 == 0) {
        e.cancel(ids[static_cast<std::size_t>(c)]);
        CHECK(ref.remove(c));
      }
      if (const int m = some_pending(); m >= 0) {
        const std::int64_t at = now + (rng() % 3 == 0 ? 0 : static_cast<std::int64_t>(rng() % 5));
        ids[static_cast<std::size_t>(m)] = e.reschedule(ids[static_cast<std::size_t>(m)], Time::ps(at));
        CHECK(ref.remove(m));
        ref.add(at, m);
      }
    };
    for (int i = 0; i < 5; ++i) add(static_cast<std::int64_t>(rng() % 3));
    // The reference replays the same choices by running alongside: each engine event must be the
    // reference's next one.
    while (true) {
      const std::size_t before = ran.size();
      const auto next = ref.pop();
      if (!e.step()) {
        CHECK_FALSE(next.has_value());
        break;
      }
      REQUIRE(next.has_value());
      REQUIRE(ran.size() == before + 1);
      CHECK(ran.back() == std::make_pair(next->at, next->name));
    }
    CHECK(ran.size() > 100);
    CHECK(e.pending() == 0);
  }
}

// Thousands of distinct pending times, so that the engine's table of recent times (4,096 slots)
// forgets some while their keys are pending: those times then get further keys. Ties stay frequent
// (a few dozen times in use at once per slot of a small window). The reference is an ordered set of
// (time, sequence), kept alongside.
TEST_CASE("many pending times: ties, moves and cancels still run in (time, sequence) order") {
  std::mt19937 rng(7);
  Engine e;
  std::map<std::pair<std::int64_t, std::uint64_t>, int> ref;  // (at, seq) -> name
  std::vector<std::pair<std::int64_t, std::uint64_t>> key_of;   // by name
  std::vector<Engine::EventId> ids;                              // by name
  std::uint64_t seq = 0;
  std::vector<int> ran, want;
  const auto pick_time = [&] {
    const std::int64_t now = e.now().count_ps();
    switch (rng() % 4) {
      case 0: return now;                                            // the current instant
      case 1: return now + 1 + static_cast<std::int64_t>(rng() % 16);  // a crowded near future
      default: return now + 1 + static_cast<std::int64_t>(rng() % 50000);
    }
  };
  std::function<void(int)> body;
  const auto add = [&](std::int64_t at) {
    const int name = static_cast<int>(ids.size());
    ids.push_back(e.schedule_at(Time::ps(at), [&body, name] { body(name); }));
    key_of.emplace_back(at, seq);
    ref[{at, seq++}] = name;
  };
  const auto random_pending = [&]() -> int {
    if (ref.empty()) return -1;
    auto it = ref.lower_bound({pick_time(), 0});
    if (it == ref.end()) it = ref.begin();
    return it->second;
  };
  body = [&](int name) {
    ran.push_back(name);
    REQUIRE_FALSE(ref.empty());  // else the engine ran an event the reference no longer holds
    const auto first = ref.begin();
    want.push_back(first->second);
    ref.erase(first);
    if (ids.size() > 60000) return;
    for (unsigned k = 1 + rng() % 2; k > 0; --k) add(pick_time());
    if (rng() % 4 == 0)
      if (const int c = random_pending(); c >= 0) {
        e.cancel(ids[static_cast<std::size_t>(c)]);
        ref.erase(key_of[static_cast<std::size_t>(c)]);
      }
    if (rng() % 2 == 0)
      if (const int m = random_pending(); m >= 0) {
        const std::int64_t at = pick_time();
        ids[static_cast<std::size_t>(m)] = e.reschedule(ids[static_cast<std::size_t>(m)], Time::ps(at));
        ref.erase(key_of[static_cast<std::size_t>(m)]);
        key_of[static_cast<std::size_t>(m)] = {at, seq};
        ref[{at, seq++}] = m;
      }
  };
  for (int i = 0; i < 6000; ++i) add(static_cast<std::int64_t>(rng() % 50000));
  e.run();
  CHECK(ref.empty());
  CHECK(e.pending() == 0);
  CHECK(ran.size() > 50000);
  CHECK(ran == want);
}

// With set_touch_ahead, an event's touch runs at stage 0 while the event two before it runs and at
// stage 1 while the one just before it runs; it changes nothing.
namespace {
std::vector<std::pair<std::uint32_t, int>>* touch_log = nullptr;  // (index, stage)
void record_touch(const void* /*owner*/, std::uint32_t index, int stage) {
  touch_log->emplace_back(index, stage);
}
}  // namespace

TEST_CASE("touch-ahead: stage 0 two events ahead, stage 1 one event ahead, order unchanged") {
  for (const bool ahead : {false, true}) {
    CAPTURE(ahead);
    Engine e;
    e.set_touch_ahead(ahead);
    std::vector<std::pair<std::uint32_t, int>> log;
    touch_log = &log;
    std::vector<std::string> seen;  // touches logged, then the event's own name, in run order
    for (std::uint32_t k = 0; k < 5; ++k)
      e.schedule_at(Time::ps(10 * (k + 1)), [&, k] {
        for (const auto& [index, stage] : log) seen.push_back(std::to_string(index) + ":" + std::to_string(stage));
        log.clear();
        seen.push_back("run " + std::to_string(k));
      }, {&record_touch, nullptr, k});
    e.run();
    touch_log = nullptr;
    if (!ahead) {
      CHECK(seen == std::vector<std::string>{"run 0", "run 1", "run 2", "run 3", "run 4"});
    } else {
      // Running event k, the engine touched k+1 at stage 1 and k+2 at stage 0.
      CHECK(seen == std::vector<std::string>{"1:1", "2:0", "run 0", "2:1", "3:0", "run 1", "3:1", "4:0",
                                             "run 2", "4:1", "run 3", "run 4"});
    }
  }
}

TEST_CASE("reschedule: the returned id names the moved event, the old one nothing") {
  Engine e;
  std::vector<std::string> log;
  const Engine::EventId a = e.schedule_at(Time::ps(10), [&] { log.push_back("a"); });
  e.schedule_at(Time::ps(20), [&] { log.push_back("b"); });
  const Engine::EventId a2 = e.reschedule(a, Time::ps(30));
  CHECK(e.is_pending(a2));
  CHECK_FALSE(e.is_pending(a));
  e.cancel(a);  // names nothing now: a no-op
  CHECK(e.pending() == 2);
  const Engine::EventId now = e.reschedule(a2, Time{});  // the current instant
  CHECK(e.is_pending(now));
  CHECK_FALSE(e.is_pending(a2));
  CHECK(e.pending() == 2);
  e.run();
  CHECK(log == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(e.is_pending(now));
  CHECK_THROWS_AS((void)e.reschedule(now, Time::ps(40)), std::logic_error);  // ran already
}

// ---- Callback (sim/callback.hpp): the events' move-only callable ----------------------------------

namespace {
// Counts live copies, so a test sees every construction matched by one destruction.
struct Counted {
  int* live;
  int* calls;
  explicit Counted(int* l, int* c) : live(l), calls(c) { ++*live; }
  Counted(Counted&& o) noexcept : live(o.live), calls(o.calls) { ++*live; }
  Counted(const Counted& o) : live(o.live), calls(o.calls) { ++*live; }
  ~Counted() { --*live; }
  void operator()() const { ++*calls; }
};
struct Big : Counted {
  using Counted::Counted;
  char pad[200] = {};  // past the inline buffer: kept on the heap
};
}  // namespace

TEST_CASE_TEMPLATE("Callback calls its target, moves it along and destroys it exactly once", T, Counted, Big) {
  using spsim::sim::Callback;
  static_assert(!std::is_copy_constructible_v<Callback>);
  int live = 0, calls = 0;
  {
    Callback a{T(&live, &calls)};
    CHECK(live == 1);
    CHECK(static_cast<bool>(a));
    a();
    CHECK(calls == 1);
    Callback b = std::move(a);
    CHECK(!a);  // NOLINT(bugprone-use-after-move): moved-from is empty, as documented
    CHECK(live == 1);
    b();
    CHECK(calls == 2);
    Callback c;
    c = std::move(b);
    CHECK(live == 1);
    c = nullptr;
    CHECK(live == 0);
    CHECK(!c);
    Callback d{T(&live, &calls)};
    d = Callback{T(&live, &calls)};  // the old target goes, the new one stays
    CHECK(live == 1);
  }
  CHECK(live == 0);
  CHECK(calls == 2);
}

TEST_CASE("events keep large and move-only captures, and run each once") {
  Engine e;
  int live = 0, calls = 0;
  auto owned = std::make_unique<int>(7);
  int seen = 0;
  e.schedule_at(Time::ps(5), [p = std::move(owned), &seen] { seen = *p; });  // move-only capture
  e.schedule_at(Time::ps(3), Big(&live, &calls));
  const Engine::EventId gone = e.schedule_at(Time::ps(4), Big(&live, &calls));
  e.cancel(gone);  // its capture is destroyed at once
  CHECK(live == 1);
  CHECK(e.run() == 2);
  CHECK(calls == 1);
  CHECK(seen == 7);
  CHECK(live == 0);
}
