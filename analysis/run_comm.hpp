// Communicator decorators for `spsim run`: TimedComm records how long each kind of communication
// holds a rank up; HostStagedComm lets a host communicator (MPI) carry device tensors (CUDA).
// Both wrap any rt::Comm, so no backend changes.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <string_view>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::analysis {

// The communication kinds a strategy can post, in report order: the trace's kinds (one vocabulary for
// measured and simulated runs) up to and including barrier. The barrier slot holds only the waits of
// sync_collectives (a strategy's own barrier() calls are not timed).
using rt::trace::CommKind;
using rt::trace::comm_kind_name;
inline constexpr int kCommKinds = static_cast<int>(CommKind::barrier) + 1;
static_assert(kCommKinds == 8 && static_cast<int>(CommKind::sendrecv) == kCommKinds - 2);

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
class TimedComm final : public rt::Comm {
 public:
  explicit TimedComm(rt::Comm& inner, bool sync_collectives = false);
  ~TimedComm() override;

  [[nodiscard]] const CommStats& stats() const { return *stats_; }
  void reset() { *stats_ = CommStats{}; }

  [[nodiscard]] int rank() const override { return inner_.rank(); }
  [[nodiscard]] int size() const override { return inner_.size(); }
  [[nodiscard]] std::string_view backend() const override { return inner_.backend(); }

  [[nodiscard]] rt::Work all_reduce(rt::Tensor& inout) override;
  [[nodiscard]] rt::Work reduce_scatter(const rt::Tensor& in, rt::Tensor& out, int dim = 0) override;
  [[nodiscard]] rt::Work all_gather(const rt::Tensor& in, rt::Tensor& out, int dim = 0) override;
  [[nodiscard]] rt::Work all_to_all(const rt::Tensor& in, rt::Tensor& out, int split_dim,
                                    int concat_dim) override;
  [[nodiscard]] rt::Work send(const rt::Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] rt::Work recv(rt::Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] rt::Work sendrecv(const rt::Tensor& out, int dst, rt::Tensor& in, int src,
                                  int tag = 0) override;
  void barrier() override { inner_.barrier(); }
  [[nodiscard]] std::unique_ptr<rt::Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  TimedComm(std::unique_ptr<rt::Comm> owned, std::shared_ptr<CommStats> stats, bool sync_collectives);
  template <class Post>
  rt::Work timed(CommKind kind, double bytes, Post&& post);

  std::unique_ptr<rt::Comm> owned_;  // set for sub-groups
  rt::Comm& inner_;
  std::shared_ptr<CommStats> stats_;
  bool sync_collectives_;
};

// Host staging: every tensor passed in is copied to a host tensor (device.to_host), the host
// communicator works on it, and results are copied back into the caller's tensor (device.copy of
// device.from_host) on wait(). This is how several ranks sharing one GPU communicate through MPI
// (`--device cuda --comm mpi`). The device must outlive the communicator and every Work.
class HostStagedComm final : public rt::Comm {
 public:
  HostStagedComm(rt::Comm& host_comm, rt::Device& device);
  ~HostStagedComm() override;

  [[nodiscard]] int rank() const override { return inner_.rank(); }
  [[nodiscard]] int size() const override { return inner_.size(); }
  [[nodiscard]] std::string_view backend() const override { return inner_.backend(); }

  [[nodiscard]] rt::Work all_reduce(rt::Tensor& inout) override;
  [[nodiscard]] rt::Work reduce_scatter(const rt::Tensor& in, rt::Tensor& out, int dim = 0) override;
  [[nodiscard]] rt::Work all_gather(const rt::Tensor& in, rt::Tensor& out, int dim = 0) override;
  [[nodiscard]] rt::Work all_to_all(const rt::Tensor& in, rt::Tensor& out, int split_dim,
                                    int concat_dim) override;
  [[nodiscard]] rt::Work send(const rt::Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] rt::Work recv(rt::Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] rt::Work sendrecv(const rt::Tensor& out, int dst, rt::Tensor& in, int src,
                                  int tag = 0) override;
  void barrier() override { inner_.barrier(); }
  [[nodiscard]] std::unique_ptr<rt::Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  HostStagedComm(std::unique_ptr<rt::Comm> owned, rt::Device& device);
  [[nodiscard]] rt::Tensor to_host(const rt::Tensor& t);
  [[nodiscard]] rt::Tensor host_like(const rt::Tensor& t);
  // A Work that waits for `inner`, then copies `host` into `dst` on the device.
  [[nodiscard]] rt::Work copy_back(rt::Work inner, rt::Tensor host, rt::Tensor dst);

  std::unique_ptr<rt::Comm> owned_;
  rt::Comm& inner_;
  rt::Device& dev_;
};

}  // namespace spsim::analysis
