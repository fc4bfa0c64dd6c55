// Comm: collectives and point-to-point messages among the ranks of a group, blocking via Work::wait().
//
// Every call returns a Work; the result buffers are valid after wait(). Backends may complete the
// operation eagerly (threads) or asynchronously (MPI_I*, NCCL on a communication stream, trace).
// Every rank of the group must post the same collectives in the same order (SPMD).
//
// Chunking: reduce_scatter / all_gather / all_to_all cut a tensor into P equal chunks along `dim`
// (that extent must be divisible by P); chunk j belongs to rank j of the group. When an extent before
// `dim` exceeds 1 the chunks are strided in memory (chunks_strided) and every backend copies them
// through a chunk-major staging buffer: a pack before the exchange, an unpack after it.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/tensor.hpp"

namespace spsim::rt {

// Whether the `parts` chunks of a tensor of `shape` along `dim` are strided in memory: more than one
// chunk and some extent before `dim` above 1. Then backends pack (send side) or unpack (receive side) a
// copy of the whole tensor.
[[nodiscard]] bool chunks_strided(const Shape& shape, int dim, int parts);

class Work {
 public:
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual void wait() = 0;
  };
  Work() = default;  // already complete
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  [[nodiscard]] static Work done() { return Work(); }
  // Blocks until the operation's buffers are ready. Idempotent.
  void wait() {
    if (impl_) {
      impl_->wait();
      impl_.reset();
    }
  }
  [[nodiscard]] bool pending() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<Impl> impl_;
};

class Comm {
 public:
  virtual ~Comm() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  [[nodiscard]] virtual std::string_view backend() const = 0;

  // In-place sum over the group.
  [[nodiscard]] virtual Work all_reduce(Tensor& inout) = 0;
  // In-place sum over the group of several tensors as one operation, the way a gradient bucket is
  // reduced (PyTorch DDP copies a bucket's gradients into one flat buffer; NCCL fuses grouped calls):
  // one latency for the whole bucket. The default posts one all_reduce per tensor and waits for all of
  // them; backends where the fusion changes the cost (trace) override it.
  [[nodiscard]] virtual Work all_reduce_coalesced(std::vector<Tensor>& inout);
  // out = chunk rank() (along dim) of the sum over the group of `in`; out.shape = in.shape with
  // shape[dim] / P.
  [[nodiscard]] virtual Work reduce_scatter(const Tensor& in, Tensor& out, int dim = 0) = 0;
  // out = concatenation along dim of every rank's `in`, in rank order.
  [[nodiscard]] virtual Work all_gather(const Tensor& in, Tensor& out, int dim = 0) = 0;
  // Chunk j of `in` (split along split_dim) goes to rank j; out = the chunks received from ranks
  // 0..P-1 concatenated along concat_dim. out.shape = in.shape with shape[split_dim] / P and
  // shape[concat_dim] * P (the same dim: shape unchanged, a pure exchange of chunks).
  [[nodiscard]] virtual Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) = 0;

  [[nodiscard]] virtual Work send(const Tensor& t, int dst, int tag = 0) = 0;
  [[nodiscard]] virtual Work recv(Tensor& t, int src, int tag = 0) = 0;
  // Send `out` to dst and receive `in` from src concurrently (the two may be different ranks).
  [[nodiscard]] virtual Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag = 0) = 0;
  // Point-to-point calls between begin_launch_group() and end_launch_group() are one launch, as
  // NCCL's ncclGroupStart/End or PyTorch's batch_isend_irecv make them: one kernel that runs them
  // together. Only the simulator's timing depends on it (replay.hpp); the other backends post each call
  // as they always do. Use LaunchGroup to pair the calls.
  virtual void begin_launch_group() {}
  virtual void end_launch_group() {}
  // Ring pass: send to rank+1, receive from rank-1 (mod P).
  [[nodiscard]] Work ring_exchange(const Tensor& out, Tensor& in, int tag = 0) {
    const int p = size();
    return sendrecv(out, (rank() + 1) % p, in, (rank() + p - 1) % p, tag);
  }

  virtual void barrier() = 0;
  // Sub-groups: `color_of_rank[r]` is the color of rank r of this group (the same vector on every
  // rank, computed by the SPMD code from a formula). Ranks of equal color form a group, ordered by
  // their rank here. Collective over this group. The vector is global so that every backend, the
  // data-less trace one included, knows each sub-group's members without exchanging messages.
  [[nodiscard]] virtual std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) = 0;
};

// Scoped launch group: begin_launch_group() now, end_launch_group() at the end of the scope.
class LaunchGroup {
 public:
  explicit LaunchGroup(Comm& comm) : comm_(comm) { comm_.begin_launch_group(); }
  ~LaunchGroup() { comm_.end_launch_group(); }
  LaunchGroup(const LaunchGroup&) = delete;
  LaunchGroup& operator=(const LaunchGroup&) = delete;

 private:
  Comm& comm_;
};

}  // namespace spsim::rt
