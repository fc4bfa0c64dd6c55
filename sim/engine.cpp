// Engine: a 4-ary heap of (time, sequence) keys, each one event or a bucket of one time's events.
#include "sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "runtime/core/hash.hpp"

namespace spsim::sim {

// ---- slots ----------------------------------------------------------------------------------------

std::uint32_t Engine::take_slot() {
  if (free_slots_.empty()) {
    generation_.push_back(0);
    pos_.push_back(kNotLone);
    callbacks_.emplace_back();
    touches_.emplace_back();
    return static_cast<std::uint32_t>(generation_.size() - 1);
  }
  const std::uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  return slot;
}

void Engine::release_slot(std::uint32_t slot) {
  callbacks_[slot] = nullptr;  // (its touches stay: prefetch_ahead touches pending events only)
  ++generation_[slot];  // even: free, and every key or entry naming the slot is stale
  free_slots_.push_back(slot);
}

// ---- the heap -------------------------------------------------------------------------------------

// A 4-ary heap: half the levels of a binary one, and a node's four children share a cache line or two.
constexpr std::size_t kArity = 4;

bool Engine::earlier(const Key& a, const Key& b) {
  return a.at != b.at ? a.at < b.at : a.seq < b.seq;
}

void Engine::place(std::size_t i, const Key& key) {
  keys_[i] = key;
  if (key.generation != 0) pos_[key.id] = static_cast<std::uint32_t>(i);
}

void Engine::sift_up(std::size_t i) {
  const Key e = keys_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!earlier(e, keys_[parent])) break;
    place(i, keys_[parent]);
    i = parent;
  }
  place(i, e);
}

void Engine::sift_down(std::size_t i) {
  const Key e = keys_[i];
  const std::size_t n = keys_.size();
  while (true) {
    const std::size_t first = kArity * i + 1;
    if (first >= n) break;
    std::size_t child = first;
    const std::size_t last = std::min(first + kArity, n);
    for (std::size_t c = first + 1; c < last; ++c)
      if (earlier(keys_[c], keys_[child])) child = c;
    if (!earlier(keys_[child], e)) break;
    place(i, keys_[child]);
    i = child;
  }
  place(i, e);
}

void Engine::push_key(const Key& key) {
  keys_.push_back(key);
  sift_up(keys_.size() - 1);
}

void Engine::remove_key(std::size_t i) {
  pos_[keys_[i].id] = kNotLone;
  const std::size_t last = keys_.size() - 1;
  if (i != last) {
    place(i, keys_[last]);
    keys_.pop_back();
    sift_down(i);
    sift_up(i);
  } else {
    keys_.pop_back();
  }
}

void Engine::pop_key() {
  const Key top = keys_.front();
  if (top.generation != 0) {
    pos_[top.id] = kNotLone;
  } else {  // a bucket: the table forgets it, and it serves again
    Bucket& b = buckets_[top.id];
    Recent& recent = recent_[recent_slot(b.at)];
    if (recent.at == b.at && recent.bucket == top.id) recent = Recent{};
    b.entries.clear();  // keeps its capacity
    b.head = 0;
    free_buckets_.push_back(top.id);
  }
  const Key last = keys_.back();
  keys_.pop_back();
  if (!keys_.empty()) {
    place(0, last);
    sift_down(0);
  }
}

std::size_t Engine::recent_slot(Time at) {
  return static_cast<std::size_t>(rt::mix64(static_cast<std::uint64_t>(at.count_ps()))) & (kRecent - 1);
}

void Engine::enqueue(Time at, std::uint32_t slot, std::uint32_t generation) {
  if (at == now_) {  // after every key of this time (all queued before the clock got here) and entry
    instant_.push_back({slot, generation});
    return;
  }
  // (pos_[slot] is kNotLone here: a new slot, or one whose lone key has just gone.)
  // The table's entry for `at`, if it has one, names `at`'s last key (the table forgets a bucket when
  // it leaves the heap): a bucket, where the event goes last, or a lone event's key, which becomes a
  // bucket of that event and this one, keeping its place in the heap. A lone key that has moved to
  // another time or left leaves a new bucket to this event. With no entry, the event gets a key of its
  // own. A new key sorts after every earlier key of `at`, whose events were all scheduled before.
  Recent& recent = recent_[recent_slot(at)];
  if (recent.at != at) {
    recent = {at, kNone, slot};
    push_key({at, next_seq_++, slot, generation});
    return;
  }
  if (recent.bucket != kNone) {
    buckets_[recent.bucket].entries.push_back({slot, generation});
    return;
  }
  const std::uint32_t b = new_bucket(at);
  recent.bucket = b;
  const std::uint32_t p = pos_[recent.lone];
  if (p != kNotLone && keys_[p].at == at) {
    Key& key = keys_[p];
    buckets_[b].entries.push_back({key.id, key.generation});
    buckets_[b].entries.push_back({slot, generation});
    pos_[key.id] = kNotLone;
    key.id = b;
    key.generation = 0;
    return;
  }
  buckets_[b].entries.push_back({slot, generation});
  push_key({at, next_seq_++, b, 0});
}

std::uint32_t Engine::new_bucket(Time at) {
  std::uint32_t b = 0;
  if (free_buckets_.empty()) {
    b = static_cast<std::uint32_t>(buckets_.size());
    buckets_.emplace_back();
  } else {
    b = free_buckets_.back();
    free_buckets_.pop_back();
  }
  buckets_[b].at = at;
  return b;
}

const Engine::Key* Engine::peek() {
  while (!keys_.empty()) {
    const Key& top = keys_.front();
    if (top.generation != 0) {
      return &top;  // a lone key is never stale
    } else {
      Bucket& b = buckets_[top.id];
      while (b.head < b.entries.size() && generation_[b.entries[b.head].slot] != b.entries[b.head].generation)
        ++b.head;  // cancelled or moved since
      if (b.head < b.entries.size()) return &top;
    }
    pop_key();  // spent
  }
  return nullptr;
}

// ---- scheduling -----------------------------------------------------------------------------------

Engine::EventId Engine::schedule_at(Time at, Callback cb, Touches touches) {
  if (at < now_) throw std::logic_error("Engine::schedule_at: time is in the past");
  const std::uint32_t slot = take_slot();
  callbacks_[slot] = std::move(cb);
  touches_[slot] = touches;
  const std::uint32_t generation = ++generation_[slot];  // odd: scheduled
  enqueue(at, slot, generation);
  ++live_;
  return {slot, generation};
}

void Engine::cancel(EventId id) {
  if (!is_pending(id)) return;  // ran or cancelled already
  --live_;
  if (pos_[id.slot] != kNotLone) remove_key(pos_[id.slot]);  // a lone key leaves the heap
  release_slot(id.slot);  // a bucket's or the instant's entry stays, stale
}

Engine::EventId Engine::reschedule(EventId id, Time at) {
  if (!is_pending(id)) throw std::logic_error("Engine::reschedule: the event is not pending");
  if (at < now_) throw std::logic_error("Engine::reschedule: time is in the past");
  // Queued at `at` after every event already scheduled for it, as a cancel and a schedule_at would
  // queue it. An event with a key of its own keeps it, with the new time and the next sequence number;
  // the table then says `at`'s last key is a lone one, so that the events after it start a bucket
  // after it. Else the old entry goes stale with the generation it names.
  const std::uint32_t generation = generation_[id.slot] += 2;  // still odd
  const std::uint32_t i = pos_[id.slot];
  if (i != kNotLone && at != now_) {
    const Key old = keys_[i];
    keys_[i] = Key{at, next_seq_++, id.slot, generation};
    if (earlier(keys_[i], old))
      sift_up(i);
    else
      sift_down(i);
    recent_[recent_slot(at)] = {at, kNone, id.slot};
    return {id.slot, generation};
  }
  if (i != kNotLone) remove_key(i);
  enqueue(at, id.slot, generation);
  return {id.slot, generation};
}

// ---- running --------------------------------------------------------------------------------------

void Engine::prefetch_ahead() const {
  // The next two events as things stand, in step()'s order: the first key's if it is for now (a lone
  // event, or the rest of a bucket), the instant's list, then the first key's and the next's (the least
  // of the heap root's children). Events the next one schedules may come in between; the guess is then
  // wasted. A few stale entries are looked at, no more.
  std::uint32_t next[2];
  int n = 0;
  const int want = touch_ahead_ ? 2 : 1;
  const auto scan_entries = [&](const std::vector<Entry>& entries, std::size_t from) {
    for (std::size_t i = from, end = std::min(entries.size(), from + 4); i < end && n < want; ++i)
      if (generation_[entries[i].slot] == entries[i].generation) next[n++] = entries[i].slot;
  };
  const auto scan = [&](const Key& k) {
    if (n == want) return;
    if (k.generation != 0) {
      next[n++] = k.id;
      return;
    }
    scan_entries(buckets_[k.id].entries, buckets_[k.id].head);
  };
  const bool first_now = !keys_.empty() && keys_.front().at == now_;
  if (first_now) scan(keys_.front());
  scan_entries(instant_, instant_head_);
  if (!keys_.empty() && !first_now) scan(keys_.front());
  if (n < want) {
    std::size_t second = 0;
    for (std::size_t c = 1; c <= kArity && c < keys_.size(); ++c)
      if (second == 0 || earlier(keys_[c], keys_[second])) second = c;
    if (second != 0) scan(keys_[second]);
  }
  for (int k = 0; k < n; ++k) {
    const auto* cb = reinterpret_cast<const char*>(&callbacks_[next[k]]);
    __builtin_prefetch(cb);
    __builtin_prefetch(cb + sizeof(Callback) - 1);
    const Touches& t = touches_[next[k]];
    if (touch_ahead_ && t.touch != nullptr) t.touch(t.owner, t.index, k == 0 ? 1 : 0);
  }
}

void Engine::run_slot(std::uint32_t slot, Time at) {
  Callback cb = std::move(callbacks_[slot]);
  release_slot(slot);
  now_ = at;
  ++processed_;
  prefetch_ahead();
  cb();  // may schedule more events
}

void Engine::run_first_key() {
  const Key top = keys_.front();
  std::uint32_t slot = top.id;
  if (top.generation != 0) {
    pop_key();
  } else {  // a bucket stays first until it is spent
    Bucket& b = buckets_[top.id];
    slot = b.entries[b.head++].slot;
  }
  --live_;
  run_slot(slot, top.at);
}

bool Engine::instant_pending() {
  while (instant_head_ < instant_.size() &&
         generation_[instant_[instant_head_].slot] != instant_[instant_head_].generation)
    ++instant_head_;  // cancelled or moved since
  return instant_head_ < instant_.size();
}

bool Engine::step() {
  // Keys of the current time were queued before the clock got here: they run before the instant's
  // list, the events scheduled for this time while it was current.
  const Key* top = peek();
  if (top != nullptr && top->at == now_) {
    run_first_key();
    return true;
  }
  if (instant_pending()) {
    const std::uint32_t slot = instant_[instant_head_++].slot;
    --live_;
    run_slot(slot, now_);
    return true;
  }
  instant_.clear();  // every entry has run or is stale: the clock may move on
  instant_head_ = 0;
  if (top == nullptr) return false;
  run_first_key();
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
  while (true) {
    const Key* top = peek();
    if (!((instant_pending() && now_ <= until) || (top != nullptr && top->at <= until))) break;
    step();
  }
  now_ = std::max(now_, until);
  return processed_ - before;
}

}  // namespace spsim::sim
