// HostStorage: 64-byte aligned host memory, shared by the CPU device and host-side communicators.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/tensor.hpp"

namespace spsim::rt {

class HostStorage final : public Storage {
 public:
  explicit HostStorage(std::size_t bytes);
  ~HostStorage() override;
  HostStorage(const HostStorage&) = delete;
  HostStorage& operator=(const HostStorage&) = delete;
  [[nodiscard]] void* data() override { return data_; }
  [[nodiscard]] std::size_t bytes() const override { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A host tensor of `shape` and `dtype` (uninitialised).
[[nodiscard]] Tensor make_host_tensor(const Shape& shape, DType dtype);

}  // namespace spsim::rt
