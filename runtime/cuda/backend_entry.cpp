// The entry point of the CUDA backend module (runtime/cuda_backend.hpp): what the spsim binary calls
// after loading libspsim_cuda.so.
#include "runtime/cuda_backend.hpp"

#include "runtime/cuda/cuda_device.hpp"
#include "runtime/nccl/nccl_comm.hpp"

namespace {

std::unique_ptr<spsim::rt::Device> make_device(spsim::rt::DType dtype) {
  return std::make_unique<spsim::rt::CudaDevice>(dtype, spsim::rt::local_cuda_device_index());
}

std::unique_ptr<spsim::rt::Comm> make_nccl_world(spsim::rt::Device& device) {
  auto* cuda = dynamic_cast<spsim::rt::CudaDevice*>(&device);
  if (!cuda) return nullptr;
  return spsim::rt::NcclComm::create_world(*cuda);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const spsim::rt::CudaBackend* spsim_cuda_backend() {
  static const spsim::rt::CudaBackend backend{spsim::rt::kCudaBackendAbi, make_device, make_nccl_world};
  return &backend;
}
