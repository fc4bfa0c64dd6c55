// abort_all (MPI_Abort with a message naming the rank) and the run watchdog.
#include "runtime/mpi/abort.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "runtime/core/error.hpp"
#include "runtime/mpi/mpi_comm.hpp"

namespace spsim::rt {

namespace {

[[nodiscard]] bool mpi_running() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);  // these two (and MPI_Query_thread, MPI_Is_thread_main) may be called
  MPI_Finalized(&finalized);      // from any thread at any time
  return initialized != 0 && finalized == 0;
}

// Whether the calling thread may make MPI calls: any thread under MPI_THREAD_MULTIPLE, else only the
// main one (MpiEnvironment asks for MPI_THREAD_SINGLE).
[[nodiscard]] bool this_thread_may_call_mpi() {
  int level = MPI_THREAD_SINGLE;
  int is_main = 0;
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&is_main);
  return level == MPI_THREAD_MULTIPLE || is_main != 0;
}

// The world rank, or -1 when MPI is not running or this thread may not ask.
[[nodiscard]] int world_rank_if_known() {
  int rank = -1;
  if (mpi_running() && this_thread_may_call_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

[[noreturn]] void abort_process(const std::string& message, int code, int rank) {
  // Process-wide on purpose: aborting is a property of the process, and the watchdog thread may race
  // the main thread here. The loser waits for the winner to take the process down.
  static std::atomic_flag aborting = ATOMIC_FLAG_INIT;
  const int exit_code = code == 0 ? 1 : code;
  if (aborting.test_and_set()) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  const std::string line =
      (rank >= 0 ? "spsim: rank " + std::to_string(rank) + ": " : std::string("spsim: ")) + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write, so lines of several ranks don't interleave
  std::fflush(stderr);
  if (mpi_running() && this_thread_may_call_mpi()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  // No MPI, MPI_Abort returned (it should not), or a thread that may not call MPI (the watchdog, unless
  // MPI_THREAD_MULTIPLE): mpirun sees this rank exit non-zero without MPI_Finalize and ends the job.
  std::_Exit(exit_code);
}

}  // namespace

void abort_all(const std::string& message, int code) {
  abort_process(message, code, world_rank_if_known());
}

Watchdog::Watchdog(std::chrono::duration<double> timeout)
    : rank_(world_rank_if_known()), thread_([this, timeout] { watch(timeout); }) {}

Watchdog::~Watchdog() {
  cancel();
}

void Watchdog::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  cancelled_cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Watchdog::watch(std::chrono::duration<double> timeout) {
  std::unique_lock lock(mutex_);
  if (cancelled_cv_.wait_for(lock, timeout, [this] { return cancelled_; })) return;
  std::ostringstream message;
  message << "timeout after " << timeout.count() << " s";
  abort_process(message.str(), timeout_exit_code, rank_);
}

std::unique_ptr<Watchdog> start_watchdog(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    std::ostringstream value;
    value << seconds;
    throw InputError("--timeout", "must be a positive number of seconds, got " + value.str());
  }
  return std::make_unique<Watchdog>(std::chrono::duration<double>(seconds));
}

}  // namespace spsim::rt
