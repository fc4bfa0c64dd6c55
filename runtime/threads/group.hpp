// Internal state of the threads backend: the world (abort, deadlock detection), groups and mailboxes.
//
// Locking order: Group::mutex_ -> Mailbox::mutex_ -> World::mutex_. World::abort takes its own mutex
// only to read the group list, then wakes groups without holding it.
#pragma once

#include <atomic>
#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/tensor.hpp"
#include "runtime/threads/threads_comm.hpp"

namespace spsim::rt::threads_detail {

// What travels between ranks: a copy of the sender's bytes plus what the receiver checks.
struct Message {
  std::uint64_t stamp = 0;  // collectives: sequence number and kind, to catch non-SPMD calls (user: unused)
  DType dtype = DType::f32;
  std::vector<std::byte> bytes;
};

// A user receive posted before its message arrived; the sender copies straight into `dst`.
struct PendingRecv {
  Tensor dst;
  bool done = false;
  std::string error;  // set instead of copying when the message does not fit `dst`
};

class Group;

// Abort flag and deadlock accounting shared by a root group and every sub-group split from it.
// Deadlock: every rank that has not finished is blocked waiting for a message. Each mailbox has a
// single receiving thread, and a sender un-counts that thread (under the mailbox lock) when it
// delivers, so "counted as blocked" always means "waiting for a message not yet sent".
class World {
 public:
  explicit World(int size);
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  [[nodiscard]] std::string reason() const;
  void abort(const std::string& reason);
  void add_group(const std::shared_ptr<Group>& group);
  // World rank `rank` starts waiting for `what`; returns a deadlock report if now every live rank waits.
  [[nodiscard]] std::optional<std::string> block(int rank, std::string what);
  void unblock(int rank);
  [[nodiscard]] std::optional<std::string> finish(int rank);

 private:
  [[nodiscard]] std::optional<std::string> deadlock_locked() const;

  const int size_;
  mutable std::mutex mutex_;
  std::atomic<bool> aborted_{false};
  std::string reason_;
  std::vector<std::weak_ptr<Group>> groups_;
  std::vector<std::string> waiting_for_;  // per world rank; empty when running
  std::vector<bool> finished_;
  int live_ = 0;
  int blocked_ = 0;
};

[[nodiscard]] GroupAborted aborted_error(const World& world);

// Messages from one rank to another on one (channel, tag), first in first out, and the receives
// posted for them. At most one of the two queues is non-empty.
class Mailbox {
 public:
  Mailbox(World& world, int receiver_world_rank, std::string label);
  void deliver(Message message);
  // Blocks until a message is there and removes it (collective channel).
  [[nodiscard]] Message take(std::string_view op);
  // Matches the oldest queued message now and returns null (throwing RuntimeError if it does not fit
  // dst), or queues a receive for a later deliver() and returns it, to wait() on.
  [[nodiscard]] std::shared_ptr<PendingRecv> post(const Tensor& dst);
  void wait(PendingRecv& recv);  // throws RuntimeError if the message did not fit
  void wake();

 private:
  template <class Ready>
  void wait_locked(std::unique_lock<std::mutex>& lock, Ready ready, std::string_view op);
  void stop_blocking_locked();

  World& world_;
  const int receiver_world_rank_;
  const std::string label_;  // "a message from world rank 1 (user tag 3)"
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Message> messages_;
  std::deque<std::shared_ptr<PendingRecv>> receivers_;
  bool receiver_blocked_ = false;  // the receiving thread is counted as blocked in world_
};

enum class Channel : std::uint8_t { user, collective };

// One communicator group: its members' world ranks, mailboxes, and the rendezvous for split().
class Group {
 public:
  Group(std::shared_ptr<World> world, std::vector<int> world_ranks);
  [[nodiscard]] static std::shared_ptr<Group> create(std::shared_ptr<World> world,
                                                     std::vector<int> world_ranks);
  [[nodiscard]] int size() const { return static_cast<int>(world_ranks_.size()); }
  [[nodiscard]] int world_rank(int rank) const { return world_ranks_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] World& world() const { return *world_; }
  [[nodiscard]] Mailbox& mailbox(int src, int dst, Channel channel, int tag);
  void wake_all();
  // The sub-group of `rank` in this group's split number `seq`, and `rank`'s rank in it. The first
  // caller of a split creates every sub-group; the others look theirs up. Does not block.
  [[nodiscard]] std::pair<std::shared_ptr<Group>, int> split(std::uint64_t seq,
                                                             const std::vector<int>& colors, int rank);

 private:
  struct Key {
    int src;
    int dst;
    Channel channel;
    int tag;
    auto operator<=>(const Key&) const = default;
  };
  struct SplitSlot {
    std::vector<int> colors;
    std::map<int, std::shared_ptr<Group>> children;
    int remaining = 0;  // members that have not yet picked up their sub-group
  };

  std::shared_ptr<World> world_;
  const std::vector<int> world_ranks_;
  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Mailbox>> mailboxes_;
  std::map<std::uint64_t, SplitSlot> splits_;
};

}  // namespace spsim::rt::threads_detail
