// NcclComm: the Comm interface on NCCL for CudaDevice tensors, on a dedicated communication stream.
//
// Ordering: each call makes the communication stream wait for the work already queued on the device's
// compute stream (an event), queues the NCCL operation, and returns a Work whose wait() makes the
// compute stream wait for it (another event). So wait() does not block the host; it orders later GPU
// work after the transfer, which is all a strategy needs (to_host/synchronize then see the result).
// A Work dropped without wait() still orders the compute stream (its destructor waits), so tensors it
// holds cannot be reused by compute kernels while NCCL is still reading or writing them.
//
// NCCL has no message tags: send/recv between a pair of ranks match in posting order; `tag` is ignored.
// all_to_all is grouped ncclSend/ncclRecv; chunks along dim > 0 are packed/unpacked by a permute kernel.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "runtime/comm.hpp"
#include "runtime/cuda/cuda_device.hpp"

namespace spsim::rt {

// The GPU this process should use when one process drives one GPU: local rank (MPI_Comm_split_type
// SHARED when built with MPI and MPI is initialised, else OMPI_COMM_WORLD_LOCAL_RANK, else 0) modulo
// the number of visible GPUs. Throws RuntimeError when there is no GPU.
[[nodiscard]] int local_cuda_device_index();

class NcclComm final : public Comm {
 public:
  // A one-rank communicator on `device` (no MPI needed).
  explicit NcclComm(CudaDevice& device);
  // A communicator over MPI_COMM_WORLD: rank 0 creates the NCCL unique id and MPI broadcasts it.
  // MPI must be initialised; `device` should be local_cuda_device_index(). Throws RuntimeError when
  // spsim was built without MPI.
  [[nodiscard]] static std::unique_ptr<NcclComm> create_world(CudaDevice& device);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  [[nodiscard]] int rank() const override;
  [[nodiscard]] int size() const override;
  [[nodiscard]] std::string_view backend() const override { return "nccl"; }

  [[nodiscard]] Work all_reduce(Tensor& inout) override;
  [[nodiscard]] Work reduce_scatter(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_gather(const Tensor& in, Tensor& out, int dim = 0) override;
  [[nodiscard]] Work all_to_all(const Tensor& in, Tensor& out, int split_dim, int concat_dim) override;
  [[nodiscard]] Work send(const Tensor& t, int dst, int tag = 0) override;
  [[nodiscard]] Work recv(Tensor& t, int src, int tag = 0) override;
  [[nodiscard]] Work sendrecv(const Tensor& out, int dst, Tensor& in, int src, int tag = 0) override;
  // Blocks the host until every rank has reached it and this rank's queued GPU work is done.
  void barrier() override;
  // ncclCommSplit with color = color_of_rank[rank()], key = rank(): the contract's ordering.
  [[nodiscard]] std::unique_ptr<Comm> split(const std::vector<int>& color_of_rank) override;

  struct State;  // ncclComm_t, streams (runtime/nccl/nccl_comm.cpp)

 private:
  explicit NcclComm(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace spsim::rt
