// HostStorage: 64-byte aligned host memory, shared by the CPU device and host-side communicators,
// optionally recycled through a HostPool.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/tensor.hpp"

namespace spsim::rt {

// A cache of freed host buffers keyed by size. Strategies allocate the same shapes over and over (one
// block per ring step); reusing buffers that are already mapped avoids the page faults of fresh large
// allocations, which otherwise dominate a CPU gradient check. Thread-safe; each CPU device owns one,
// and every buffer holds a reference to its pool, so buffers may outlive the device.
class HostPool {
 public:
  explicit HostPool(std::size_t max_cached_bytes = std::size_t{2} << 30);
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  [[nodiscard]] void* take(std::size_t bytes);  // bytes already rounded by round_up()
  void give(void* data, std::size_t bytes);
  [[nodiscard]] static std::size_t round_up(std::size_t bytes);

 private:
  std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
  std::size_t max_cached_bytes_;
};

class HostStorage final : public Storage {
 public:
  explicit HostStorage(std::size_t bytes, std::shared_ptr<HostPool> pool = nullptr);
  ~HostStorage() override;
  HostStorage(const HostStorage&) = delete;
  HostStorage& operator=(const HostStorage&) = delete;
  [[nodiscard]] void* data() override { return data_; }
  [[nodiscard]] std::size_t bytes() const override { return bytes_; }
  [[nodiscard]] const std::shared_ptr<HostPool>& pool() const { return pool_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::shared_ptr<HostPool> pool_;
};

// A host tensor of `shape` and `dtype` (uninitialised), from `pool` when given.
[[nodiscard]] Tensor make_host_tensor(const Shape& shape, DType dtype, std::shared_ptr<HostPool> pool = nullptr);

// The pool `t`'s storage came from (nullptr if none), so derived tensors can use the same one.
[[nodiscard]] std::shared_ptr<HostPool> pool_of(const Tensor& t);

}  // namespace spsim::rt
