// TimedComm: a communicator decorator for `spsim run` that records how long each kind of communication
// holds a rank up. It wraps any Comm, so no backend changes.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string_view>

#include "runtime/comm.hpp"
#include "runtime/core/comm_kind.hpp"

namespace spsim::rt {

// Statistics per communication kind (runtime/core/comm_kind.hpp, report order). The barrier slot holds
// only the waits of sync_collectives (a strategy's own barrier() calls are not timed).

struct CommKindStats {
  int calls = 0;
  double bytes = 0;      // bytes this rank passed to the calls (the input buffer, nccl-tests' "size")
  double blocked_s = 0;  // seconds spent inside the posting call plus inside Work::wait()
};
using CommStats = std::array<CommKindStats, kCommKinds>;

// Times every call of the wrapped communicator per kind. blocked_s is what the rank lost to the
// kind: the time inside the call that posts it plus the time inside wait() (a pass overlapped with
// compute that is complete when waited for costs only its posting). On asynchronous device
// backends (NCCL) wait() does not block the host, so the numbers are host-side enqueue times.
// Sub-groups made by split() are timed into the same statistics. Not thread-safe (one per rank).
//
// sync_collectives: every collective is preceded by a barrier of its group, timed as kind barrier, so
// the collective's own blocked time no longer includes waiting for the last member to arrive (the
// skew of the compute before it). The step then holds the same work plus one barrier per collective.
class TimedComm final : public Comm {
 public:
  explicit TimedComm(Comm& inner, bool sync_collectives = false);
  ~TimedComm() override;

  [[nodiscard]] const CommStats& stats() const { return *stats_; }
  void reset() { *stats_ = CommStats{}; }

  [[nodiscard]] int rank() const override { return inner_.rank(); }
  [[nodiscard]] int size() const override { return inner_.size(); }
  [[nodiscard]] std::string_view backend() const override { return inner_.backend(); }

  [[nodiscard]] Work all_reduce(Tensor& inout) override;
  [[nodiscard]] Work reduce_scatter(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_gather(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) override;
  [[nodiscard]] Work send(const Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] Work recv(Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag = 0) override;
  void barrier() override { inner_.barrier(); }
  void begin_launch_group() override { inner_.begin_launch_group(); }
  void end_launch_group() override { inner_.end_launch_group(); }
  [[nodiscard]] std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  TimedComm(std::unique_ptr<Comm> owned, std::shared_ptr<CommStats> stats, bool sync_collectives);
  template <class Post>
  Work timed(CommKind kind, double bytes, Post&& post);

  std::unique_ptr<Comm> owned_;  // set for sub-groups
  Comm& inner_;
  std::shared_ptr<CommStats> stats_;
  bool sync_collectives_;
};

}  // namespace spsim::rt
