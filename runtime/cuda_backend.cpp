// Loading the CUDA backend module (runtime/cuda_backend.hpp).
#include "runtime/cuda_backend.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "runtime/core/error.hpp"

namespace spsim::rt {
namespace {

std::string module_path() {
  if (const char* env = std::getenv("SPSIM_CUDA_BACKEND"); env && *env) return env;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "libspsim_cuda.so";  // the loader's search path
  return (exe.parent_path() / "libspsim_cuda.so").string();
}

}  // namespace

const CudaBackend& cuda_backend(const std::string& where) {
  static std::mutex mu;
  static const CudaBackend* loaded = nullptr;
  std::lock_guard lock(mu);
  if (loaded) return *loaded;
  const std::string path = module_path();
  // RTLD_NOW: a symbol the module needs and the binary lacks is reported here, not at the first call.
  // Never closed: devices and communicators it made may live until exit.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw InputError(where, "the CUDA backend module could not be loaded from " + path + ": " +
                                (why ? why : "unknown reason") +
                                " (build it with the spsim target, or point SPSIM_CUDA_BACKEND at it)");
  }
  using Entry = const CudaBackend* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaBackendSymbol));
  const CudaBackend* backend = entry ? entry() : nullptr;
  if (!backend || backend->abi != kCudaBackendAbi || !backend->make_device || !backend->make_nccl_world)
    throw InputError(where, path + " is not a CUDA backend module of this spsim (missing entry point or ABI " +
                                std::to_string(backend ? backend->abi : 0) + " where this binary expects " +
                                std::to_string(kCudaBackendAbi) + "); rebuild it with this binary");
  loaded = backend;
  return *loaded;
}

}  // namespace spsim::rt
