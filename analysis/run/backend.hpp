// Device and communicator selection for `spsim run` and `spsim calibrate`: `--backend mpi` is cpu + mpi,
// `--backend nccl` is cuda + nccl, and `--device` / `--comm` pick each side (cuda + mpi stages device
// tensors through host memory, so several ranks can share one GPU).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"

namespace spsim::analysis {

struct BackendChoice {
  std::string device = "cpu";  // cpu | cuda
  std::string comm = "mpi";    // mpi | nccl
};

// `backend` ("" = none, "mpi", "nccl") gives the defaults; non-empty `device` / `comm` override them.
// InputError naming the argument for an unknown name or nccl without cuda.
[[nodiscard]] BackendChoice resolve_backend(const std::string& backend, const std::string& device,
                                            const std::string& comm);

// Whether this build has the MPI backend (SPSIM_WITH_MPI) and the CUDA/NCCL one (SPSIM_WITH_CUDA).
[[nodiscard]] bool built_with_mpi();
[[nodiscard]] bool built_with_cuda();

// The device of this rank: CpuDevice(dtype), or CudaDevice(dtype, local GPU). InputError for cuda in a
// build without CUDA; the backend's errors (no GPU, ...) propagate.
[[nodiscard]] std::unique_ptr<rt::Device> make_run_device(const BackendChoice& choice, rt::DType dtype);

// The communicator over all processes of the MPI job (collective; MPI must be initialised): MpiComm
// (wrapped in rt::HostStagedComm for a cuda device) or NcclComm. Owns whatever it wraps.
class RunComm {
 public:
  RunComm(const BackendChoice& choice, rt::Device& dev);
  ~RunComm();
  RunComm(const RunComm&) = delete;
  RunComm& operator=(const RunComm&) = delete;
  [[nodiscard]] rt::Comm& get() { return top_ ? *top_ : *base_; }

 private:
  std::unique_ptr<rt::Comm> base_;
  std::unique_ptr<rt::Comm> top_;  // a decorator of base_, or null
};

// Runs `step` on every rank of `world` (a host communicator such as MpiComm) and agrees on the outcome:
// 0 when it succeeded everywhere, else the exit code of the lowest failing rank (2 for InputError, 3 for
// any other exception), which alone prints its message to stderr. So a bad config that every rank
// rejects is reported once, by rank 0, and no rank goes on to wait for a peer that gave up.
[[nodiscard]] int agree_on_failure(rt::Comm& world, const std::function<void()>& step);

// Whether `flag` is set on any rank of `world` (a host communicator). Collective.
[[nodiscard]] bool any_rank(rt::Comm& world, bool flag);

}  // namespace spsim::analysis
