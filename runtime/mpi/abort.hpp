// Failure handling for multi-process runs: abort_all takes the whole MPI job down with a message naming
// the rank; Watchdog bounds a run's wall time. Together they turn any rank's failure into a prompt
// non-zero exit of every rank instead of the others waiting forever in a collective.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace spsim::rt {

// Exit code of a run stopped by the watchdog (the same as coreutils' timeout(1)).
inline constexpr int timeout_exit_code = 124;

// Prints "spsim: rank R: <message>" to stderr (once per process, even if several threads get here) and
// calls MPI_Abort(MPI_COMM_WORLD, code): mpirun then kills every rank and exits non-zero. A code of 0
// is turned into 1, since an abort is never a success. Without a running MPI (before MPI_Init, after
// MPI_Finalize) it prints "spsim: <message>" and ends this process with `code`; so does a thread that
// may not call MPI (not the main one, below MPI_THREAD_MULTIPLE), and mpirun, seeing a rank exit
// non-zero without MPI_Finalize, then ends the job. This is the one place in the library that ends the
// process, by design.
[[noreturn]] void abort_all(const std::string& message, int code);

// A thread that aborts the job like abort_all("timeout after N s", timeout_exit_code) unless cancel() is
// called (or the Watchdog destroyed) within `timeout` of its construction (steady clock). Construct it
// on the main thread: it learns the rank there, since its own thread may not call MPI.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::duration<double> timeout);
  ~Watchdog();  // cancels
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Stops the watchdog; returns once its thread has finished. Idempotent.
  void cancel();

 private:
  void watch(std::chrono::duration<double> timeout);
  std::mutex mutex_;
  std::condition_variable cancelled_cv_;
  bool cancelled_ = false;
  int rank_ = -1;       // world rank for the message, -1 without MPI
  std::thread thread_;  // last: starts after the members it uses exist
};

// For `--timeout SECONDS`: throws InputError("--timeout", ...) unless 0 < seconds and finite.
[[nodiscard]] std::unique_ptr<Watchdog> start_watchdog(double seconds);

}  // namespace spsim::rt
