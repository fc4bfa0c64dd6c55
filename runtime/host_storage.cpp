// Aligned host allocations.
#include "runtime/host_storage.hpp"

#include <cstdlib>
#include <new>

namespace spsim::rt {

HostStorage::HostStorage(std::size_t bytes) : bytes_(bytes) {
  constexpr std::size_t align = 64;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  data_ = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (!data_) throw std::bad_alloc();
}

HostStorage::~HostStorage() { std::free(data_); }

Tensor make_host_tensor(const Shape& shape, DType dtype) {
  const auto bytes = static_cast<std::size_t>(numel(shape)) * dtype_bytes(dtype);
  return Tensor(std::make_shared<HostStorage>(bytes), shape, dtype);
}

}  // namespace spsim::rt
