// TraceComm: a Comm that moves no data; it validates each call and records a CommOp, and its Work's
// wait() records the dependency (runtime/trace/trace.hpp says what the records mean).
#pragma once

#include <memory>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/trace/trace.hpp"

namespace spsim::rt::trace {

class TraceComm final : public Comm {
 public:
  // The world group: ranks 0..size-1, this is `rank`.
  TraceComm(int rank, int size, Recorder recorder);

  [[nodiscard]] int rank() const override { return my_index_; }
  [[nodiscard]] int size() const override { return static_cast<int>(group_.members.size()); }
  [[nodiscard]] std::string_view backend() const override { return "trace"; }
  [[nodiscard]] GroupId group() const { return group_.id; }
  [[nodiscard]] const std::vector<int>& members() const { return group_.members; }  // world ranks

  [[nodiscard]] Work all_reduce(Tensor& inout) override;
  // One all_reduce CommOp of the tensors' total bytes (a fused bucket).
  [[nodiscard]] Work all_reduce_coalesced(std::vector<Tensor>& inout) override;
  [[nodiscard]] Work reduce_scatter(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_gather(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) override;
  [[nodiscard]] Work send(const Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] Work recv(Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag = 0) override;
  // Every op after the first of a launch group is recorded with CommOp::joins_launch.
  void begin_launch_group() override { ++launch_depth_; }
  void end_launch_group() override {
    if (launch_depth_ > 0 && --launch_depth_ == 0) launch_has_op_ = false;
  }
  // Recorded as a barrier CommOp immediately followed by a Wait on it (the host blocks).
  void barrier() override;
  // Members are computed locally from the global colors; nothing is recorded but the group table.
  [[nodiscard]] std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) override;

 private:
  TraceComm(Group group, int my_index, Recorder recorder);
  [[nodiscard]] Work post(CommOp op);
  [[nodiscard]] CommOp collective(CommKind kind, std::uint64_t bytes);
  void check_peer(const char* op, int peer) const;
  Group group_;
  int my_index_;
  Recorder recorder_;
  int launch_depth_ = 0;        // open begin_launch_group() calls
  bool launch_has_op_ = false;  // the open launch group has recorded an op
};

}  // namespace spsim::rt::trace
