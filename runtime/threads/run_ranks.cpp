// run_ranks: P threads, one ThreadsWorld, first real exception rethrown, nothing left hanging.
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/threads/threads_comm.hpp"

namespace spsim::rt {

namespace {
std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

// The first exception a rank threw on its own, and the first GroupAborted (a consequence of another
// rank's failure, or the report of a deadlock).
class FirstErrors {
 public:
  void record(std::exception_ptr error, bool is_abort) {
    std::lock_guard lock(mutex_);
    auto& slot = is_abort ? abort_ : own_;
    if (!slot) slot = std::move(error);
  }
  void rethrow() const {
    if (own_) std::rethrow_exception(own_);
    if (abort_) std::rethrow_exception(abort_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr own_;
  std::exception_ptr abort_;
};
}  // namespace

void run_ranks(int world_size, const std::function<void(Comm&)>& fn) {
  const ThreadsWorld world(world_size);
  FirstErrors errors;
  auto body = [&](int rank) {
    try {
      auto comm = world.comm(rank);
      fn(*comm);
      world.finished(rank);
    } catch (const GroupAborted&) {
      errors.record(std::current_exception(), true);
    } catch (...) {
      errors.record(std::current_exception(), false);
      world.abort("rank " + std::to_string(rank) + " threw: " + what_of(std::current_exception()));
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(world_size));
  try {
    for (int r = 0; r < world_size; ++r) threads.emplace_back(body, r);
  } catch (...) {
    world.abort("could not start a thread for every rank");
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  errors.rethrow();
}

}  // namespace spsim::rt
