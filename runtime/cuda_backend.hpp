// The CUDA device and NCCL communicator as a plugin the spsim binary loads only when a command asks for
// them (`run` / `calibrate` with --device cuda or --comm nccl).
//
// Linking cuBLAS into the binary ran its static initialisers at every start: 0.35-0.4 s and 26,000 page
// faults before main(), in every `simulate`, `compare` and test process. The backend is therefore a
// module of its own (libspsim_cuda.so, built next to the binary from the spsim_cuda objects) with one
// C entry point; the binary exports its symbols, so the module calls runtime/ code in the binary rather
// than a second copy of it. The loader is plain dlopen and always compiled; only SPSIM_WITH_CUDA builds
// have a module to load.
#pragma once

#include <memory>
#include <string>

#include "runtime/comm.hpp"
#include "runtime/device.hpp"

namespace spsim::rt {

// Bumped whenever CudaBackend changes, so a stale module is refused rather than called.
inline constexpr int kCudaBackendAbi = 1;

struct CudaBackend {
  int abi = kCudaBackendAbi;
  // A CudaDevice in `dtype` on this process's local GPU; RuntimeError when there is none.
  std::unique_ptr<Device> (*make_device)(DType dtype) = nullptr;
  // NcclComm over every process of the job; nullptr when `device` is not a CudaDevice.
  std::unique_ptr<Comm> (*make_nccl_world)(Device& device) = nullptr;
};

// The name of the module's entry point: `const CudaBackend* spsim_cuda_backend()`, extern "C".
inline constexpr const char* kCudaBackendSymbol = "spsim_cuda_backend";

// Loads the module once per process and returns its entry points. The module is the file named by
// $SPSIM_CUDA_BACKEND, else libspsim_cuda.so in the directory of the running executable. Throws
// InputError(where, ...) naming the file and the loader's reason when it cannot be loaded.
[[nodiscard]] const CudaBackend& cuda_backend(const std::string& where);

}  // namespace spsim::rt
