// Threads backend of Comm: P ranks as threads of one process, exchanging buffered messages in memory.
//
// Sends copy into the receiver's mailbox and return at once, so ring passes and pairwise exchanges
// posted by every rank before anyone waits never deadlock. A receive is posted (matched in posting
// order, MPI style) and completes when its message arrives; collectives run to completion when posted
// and return a done Work. Collectives are real message-passing algorithms with a fixed reduction order,
// so results are deterministic and all_reduce is bit-identical on every rank:
//   all_reduce     ring reduce-scatter + ring all-gather over the flat buffer, 2(P-1) steps
//   reduce_scatter ring over the P chunks along `dim`, P-1 steps
//   all_gather     ring, P-1 steps
//   all_to_all     pairwise exchange: step k sends to (r+k)%P and receives from (r-k+P)%P
//   barrier        dissemination: round k signals (r+2^k)%P and waits for (r-2^k+P)%P
// (Thakur, Rabenseifner, Gropp, "Optimization of collective communication operations in MPICH", 2005.)
//
// Nothing ever hangs: when a rank throws (run_ranks) or every running rank waits for a message nobody
// can send any more (deadlock), the world is aborted and every blocked call throws GroupAborted.
// Deadlock detection assumes what run_ranks sets up: one thread per rank makes that rank's calls, and
// ranks that have returned are reported with ThreadsWorld::finished.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/comm.hpp"

namespace spsim::rt {

namespace threads_detail {
class World;
class Group;
}  // namespace threads_detail

// Thrown by every communication call of an aborted world; what() gives the reason.
class GroupAborted : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// The shared state of `size` in-process ranks: mailboxes, abort flag, sub-group rendezvous.
// comm(r) is handed to the thread that plays rank r; one Comm is used by one thread at a time.
class ThreadsWorld {
 public:
  explicit ThreadsWorld(int size);  // throws RuntimeError unless size >= 1
  [[nodiscard]] int size() const;
  [[nodiscard]] std::unique_ptr<Comm> comm(int rank) const;
  // Wakes every rank blocked in this world (sub-groups included); they and all later calls throw
  // GroupAborted(reason). The first reason wins.
  void abort(const std::string& reason) const;
  [[nodiscard]] bool aborted() const;
  // Rank `rank` will make no more calls. Lets the deadlock detector see that ranks still waiting for
  // it wait in vain. run_ranks calls it when a rank's function returns.
  void finished(int rank) const;

 private:
  std::shared_ptr<threads_detail::World> world_;
  std::shared_ptr<threads_detail::Group> root_;
};

// Runs fn on `world_size` threads, each with its own Comm of one ThreadsWorld, and joins them.
// If a rank throws, the world is aborted (so no rank hangs) and the first exception that is not a
// consequence of the abort is rethrown here, with its original type.
void run_ranks(int world_size, const std::function<void(Comm&)>& fn);

}  // namespace spsim::rt
