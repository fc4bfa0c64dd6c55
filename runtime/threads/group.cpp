// World (abort, deadlock detection), mailboxes and groups of the threads backend.
#include "runtime/threads/group.hpp"

#include <algorithm>
#include <cstring>

namespace spsim::rt::threads_detail {

// ---- World ------------------------------------------------------------------------------------

World::World(int size)
    : size_(size),
      waiting_for_(static_cast<std::size_t>(size)),
      finished_(static_cast<std::size_t>(size), false),
      live_(size) {}

std::string World::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void World::abort(const std::string& reason) {
  std::vector<std::shared_ptr<Group>> groups;
  {
    std::lock_guard lock(mutex_);
    if (aborted_.load(std::memory_order_relaxed)) return;
    reason_ = reason;
    aborted_.store(true, std::memory_order_release);
    for (const auto& weak : groups_)
      if (auto group = weak.lock()) groups.push_back(std::move(group));
  }
  for (const auto& group : groups) group->wake_all();
}

void World::add_group(const std::shared_ptr<Group>& group) {
  std::lock_guard lock(mutex_);
  std::erase_if(groups_, [](const std::weak_ptr<Group>& g) { return g.expired(); });
  groups_.push_back(group);
}

std::optional<std::string> World::block(int rank, std::string what) {
  std::lock_guard lock(mutex_);
  waiting_for_[static_cast<std::size_t>(rank)] = std::move(what);
  ++blocked_;
  return deadlock_locked();
}

void World::unblock(int rank) {
  std::lock_guard lock(mutex_);
  waiting_for_[static_cast<std::size_t>(rank)].clear();
  --blocked_;
}

std::optional<std::string> World::finish(int rank) {
  std::lock_guard lock(mutex_);
  if (finished_[static_cast<std::size_t>(rank)]) return std::nullopt;
  finished_[static_cast<std::size_t>(rank)] = true;
  --live_;
  return deadlock_locked();
}

std::optional<std::string> World::deadlock_locked() const {
  if (live_ == 0 || blocked_ < live_) return std::nullopt;
  std::string report = "deadlock: every running rank waits for a message that no rank can send any more";
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    report += "; rank " + std::to_string(r) +
              (finished_[i] ? std::string(" has finished") : " waits in " + waiting_for_[i]);
  }
  return report;
}

GroupAborted aborted_error(const World& world) {
  return GroupAborted("threads comm: group aborted: " + world.reason());
}

// ---- Mailbox ----------------------------------------------------------------------------------

Mailbox::Mailbox(World& world, int receiver_world_rank, std::string label)
    : world_(world), receiver_world_rank_(receiver_world_rank), label_(std::move(label)) {}

namespace {
// Copies a message into a posted receive, or records why it does not fit.
void fill(PendingRecv& recv, const Message& message) {
  if (message.dtype != recv.dst.dtype() || message.bytes.size() != recv.dst.nbytes()) {
    recv.error = "threads comm: recv of " + std::string(dtype_name(recv.dst.dtype())) + " " +
                 to_string(recv.dst.shape()) + " (" + std::to_string(recv.dst.nbytes()) +
                 " bytes) matched a " + std::string(dtype_name(message.dtype)) + " message of " +
                 std::to_string(message.bytes.size()) + " bytes";
  } else if (!message.bytes.empty()) {
    std::memcpy(recv.dst.storage()->data(), message.bytes.data(), message.bytes.size());
  }
  recv.done = true;
}
}  // namespace

void Mailbox::deliver(Message message) {
  std::lock_guard lock(mutex_);
  if (world_.aborted()) throw aborted_error(world_);
  if (receivers_.empty()) {
    messages_.push_back(std::move(message));
  } else {
    fill(*receivers_.front(), message);
    receivers_.pop_front();
  }
  stop_blocking_locked();
  cv_.notify_all();
}

Message Mailbox::take(std::string_view op) {
  std::unique_lock lock(mutex_);
  wait_locked(
      lock, [this] { return !messages_.empty(); }, op);
  Message message = std::move(messages_.front());
  messages_.pop_front();
  return message;
}

std::shared_ptr<PendingRecv> Mailbox::post(const Tensor& dst) {
  auto recv = std::make_shared<PendingRecv>();
  recv->dst = dst;
  std::lock_guard lock(mutex_);
  if (world_.aborted()) throw aborted_error(world_);
  if (messages_.empty()) {
    receivers_.push_back(recv);
    return recv;
  }
  fill(*recv, messages_.front());
  messages_.pop_front();
  if (!recv->error.empty()) throw RuntimeError(recv->error);
  return nullptr;
}

void Mailbox::wait(PendingRecv& recv) {
  std::unique_lock lock(mutex_);
  wait_locked(
      lock, [&recv] { return recv.done; }, "recv");
  if (!recv.error.empty()) throw RuntimeError(recv.error);
}

void Mailbox::wake() {
  std::lock_guard lock(mutex_);
  cv_.notify_all();
}

template <class Ready>
void Mailbox::wait_locked(std::unique_lock<std::mutex>& lock, Ready ready, std::string_view op) {
  while (!ready()) {
    if (world_.aborted()) {
      stop_blocking_locked();
      throw aborted_error(world_);
    }
    if (!receiver_blocked_) {
      receiver_blocked_ = true;
      if (auto deadlock = world_.block(receiver_world_rank_, std::string(op) + " for " + label_)) {
        stop_blocking_locked();
        lock.unlock();  // abort() locks every mailbox, this one included
        world_.abort(*deadlock);
        throw aborted_error(world_);
      }
    }
    cv_.wait(lock);
  }
  stop_blocking_locked();
}

void Mailbox::stop_blocking_locked() {
  if (!receiver_blocked_) return;
  receiver_blocked_ = false;
  world_.unblock(receiver_world_rank_);
}

// ---- Group ------------------------------------------------------------------------------------

Group::Group(std::shared_ptr<World> world, std::vector<int> world_ranks)
    : world_(std::move(world)), world_ranks_(std::move(world_ranks)) {}

std::shared_ptr<Group> Group::create(std::shared_ptr<World> world, std::vector<int> world_ranks) {
  auto group = std::make_shared<Group>(world, std::move(world_ranks));
  world->add_group(group);
  return group;
}

Mailbox& Group::mailbox(int src, int dst, Channel channel, int tag) {
  std::lock_guard lock(mutex_);
  auto& slot = mailboxes_[Key{src, dst, channel, tag}];
  if (!slot) {
    std::string label = "a message from rank " + std::to_string(world_rank(src));
    label += channel == Channel::user ? " (tag " + std::to_string(tag) + ")" : " (collective)";
    slot = std::make_unique<Mailbox>(*world_, world_rank(dst), std::move(label));
  }
  return *slot;
}

void Group::wake_all() {
  std::lock_guard lock(mutex_);
  for (auto& [key, box] : mailboxes_) box->wake();
}

std::pair<std::shared_ptr<Group>, int> Group::split(std::uint64_t seq, const std::vector<int>& colors,
                                                    int rank) {
  if (std::ssize(colors) != size())
    throw RuntimeError("threads comm: split got " + std::to_string(colors.size()) +
                       " colors for a group of " + std::to_string(size()) + " ranks");
  std::lock_guard lock(mutex_);
  if (world_->aborted()) throw aborted_error(*world_);
  auto [it, fresh] = splits_.try_emplace(seq);
  SplitSlot& slot = it->second;
  if (fresh) {
    slot.colors = colors;
    slot.remaining = size();
    std::map<int, std::vector<int>> members;  // color -> world ranks, in group rank order
    for (int r = 0; r < size(); ++r) members[colors[static_cast<std::size_t>(r)]].push_back(world_rank(r));
    for (auto& [color, ranks] : members) slot.children[color] = create(world_, std::move(ranks));
  } else if (slot.colors != colors) {
    throw RuntimeError("threads comm: split #" + std::to_string(seq) + ": rank " + std::to_string(rank) +
                       " passed a different color vector than another rank (it must be the same on all)");
  }
  const int color = colors[static_cast<std::size_t>(rank)];
  auto child = slot.children.at(color);
  const auto sub_rank = static_cast<int>(std::count(colors.begin(), colors.begin() + rank, color));
  if (--slot.remaining == 0) splits_.erase(it);
  return {std::move(child), sub_rank};
}

}  // namespace spsim::rt::threads_detail
