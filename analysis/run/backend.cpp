// Backend selection for run/calibrate; the only analysis code that names the MPI and CUDA backends.
#include "analysis/run/backend.hpp"

#include <cstdio>

#include "runtime/core/error.hpp"
#include "runtime/cpu/cpu_device.hpp"
#include "runtime/host_staged_comm.hpp"
#include "runtime/host_storage.hpp"
#ifdef SPSIM_WITH_MPI
#include "runtime/mpi/mpi_comm.hpp"
#endif
#ifdef SPSIM_WITH_CUDA
#include "runtime/cuda_backend.hpp"
#endif

namespace spsim::analysis {

BackendChoice resolve_backend(const std::string& backend, const std::string& device,
                              const std::string& comm) {
  BackendChoice c;
  if (backend == "nccl")
    c = {"cuda", "nccl"};
  else if (!backend.empty() && backend != "mpi")
    throw InputError("--backend",
                     "unknown backend '" + backend + "'; valid choices: mpi (cpu + mpi), nccl (cuda + nccl)");
  if (!device.empty()) {
    if (device != "cpu" && device != "cuda")
      throw InputError("--device", "unknown device '" + device + "'; valid choices: cpu, cuda");
    c.device = device;
  }
  if (!comm.empty()) {
    if (comm != "mpi" && comm != "nccl")
      throw InputError("--comm", "unknown communicator '" + comm + "'; valid choices: mpi, nccl");
    c.comm = comm;
  }
  if (c.comm == "nccl" && c.device != "cuda")
    throw InputError(comm.empty() ? "--backend" : "--comm",
                     "nccl needs --device cuda (NCCL moves GPU memory)");
  if (c.device == "cuda" && !built_with_cuda())
    throw InputError("--device",
                     "cuda is not available: this spsim was built without CUDA (SPSIM_WITH_CUDA)");
  return c;
}

bool built_with_mpi() {
#ifdef SPSIM_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool built_with_cuda() {
#ifdef SPSIM_WITH_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<rt::Device> make_run_device(const BackendChoice& choice, rt::DType dtype) {
#ifdef SPSIM_WITH_CUDA
  if (choice.device == "cuda") return rt::cuda_backend("--device").make_device(dtype);
#endif
  if (choice.device == "cuda") throw InputError("--device", "cuda is not available in this build");
  return std::make_unique<rt::CpuDevice>(dtype);
}

RunComm::RunComm([[maybe_unused]] const BackendChoice& choice, [[maybe_unused]] rt::Device& dev) {
#ifdef SPSIM_WITH_CUDA
  if (choice.comm == "nccl") {
    base_ = rt::cuda_backend("--comm").make_nccl_world(dev);
    if (!base_) throw InputError("--comm", "nccl needs --device cuda");
    return;
  }
#endif
#ifdef SPSIM_WITH_MPI
  base_ = rt::MpiComm::duplicate_world();
  if (choice.device != "cpu") top_ = std::make_unique<rt::HostStagedComm>(*base_, dev);
#else
  throw InputError("run",
                   "this spsim was built without MPI (SPSIM_WITH_MPI); install libopenmpi-dev and rebuild");
#endif
}

RunComm::~RunComm() = default;

int agree_on_failure(rt::Comm& world, const std::function<void()>& step) {
  int code = 0;
  std::string message;
  try {
    step();
  } catch (const InputError& e) {
    code = 2, message = std::string("spsim: error: ") + e.what();
  } catch (const std::exception& e) {
    code = 3, message = "spsim: rank " + std::to_string(world.rank()) + ": error: " + e.what();
  }
  rt::Tensor mine = rt::make_host_tensor({1}, rt::DType::f64);
  rt::Tensor all = rt::make_host_tensor({world.size()}, rt::DType::f64);
  mine.data<double>()[0] = code;
  world.all_gather(mine, all).wait();
  for (int r = 0; r < world.size(); ++r) {
    const int c = static_cast<int>(all.data<double>()[r]);
    if (c == 0) continue;
    if (r == world.rank()) std::fprintf(stderr, "%s\n", message.c_str());
    return c;
  }
  return 0;
}

bool any_rank(rt::Comm& world, bool flag) {
  rt::Tensor t = rt::make_host_tensor({1}, rt::DType::f64);
  t.data<double>()[0] = flag ? 1 : 0;
  world.all_reduce(t).wait();
  return t.data<double>()[0] > 0;
}

}  // namespace spsim::analysis
