// HostStagedComm: a communicator decorator that lets a host communicator (MPI) carry device tensors
// (CUDA) by staging them through host memory. It wraps any Comm, so no backend changes.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"

namespace spsim::rt {

// Host staging: every tensor passed in is copied to a host tensor (device.to_host), the host
// communicator works on it, and results are copied back into the caller's tensor (device.copy of
// device.from_host) on wait(). This is how several ranks sharing one GPU communicate through MPI
// (`--device cuda --comm mpi`). The device must outlive the communicator and every Work.
class HostStagedComm final : public Comm {
 public:
  HostStagedComm(Comm& host_comm, Device& device);
  ~HostStagedComm() override;

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
  HostStagedComm(std::unique_ptr<Comm> owned, Device& device);
  [[nodiscard]] Tensor to_host(const Tensor& t);
  [[nodiscard]] Tensor host_like(const Tensor& t);
  // A Work that waits for `inner`, then copies `host` into `dst` on the device.
  [[nodiscard]] Work copy_back(Work inner, Tensor host, Tensor dst);

  std::unique_ptr<Comm> owned_;
  Comm& inner_;
  Device& dev_;
};

}  // namespace spsim::rt
