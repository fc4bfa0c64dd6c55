// CachingAllocator: device memory from cudaMalloc, kept for reuse on release; CudaStorage owns one block.
//
// Reuse is safe without events because a device's work is queued on one compute stream in program
// order: a block released after some queued kernel uses it can only be handed to work queued later on
// that stream. Work on other streams (NCCL) holds its tensors until the compute stream has waited on it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/cuda/cuda_device.hpp"

namespace spsim::rt::cuda_detail {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device_index) : device_(device_index) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;  // the block's size (>= the request)
  };
  // A cached block of at least `bytes` (at most twice the rounded request) or a fresh cudaMalloc; on
  // out-of-memory the cache is emptied and the cudaMalloc retried once.
  [[nodiscard]] Block allocate(std::size_t bytes);
  void release(Block block) noexcept;
  [[nodiscard]] CudaMemoryStats stats() const;

 private:
  void empty_cache_locked() noexcept;
  int device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;  // block size -> address
  CudaMemoryStats stats_;
};

// Device memory backing a Tensor; returns its block to the allocator when the last tensor lets go.
class CudaStorage final : public Storage {
 public:
  CudaStorage(std::shared_ptr<CachingAllocator> allocator, std::size_t bytes);
  ~CudaStorage() override { allocator_->release(block_); }
  CudaStorage(const CudaStorage&) = delete;
  CudaStorage& operator=(const CudaStorage&) = delete;
  [[nodiscard]] void* data() override { return block_.ptr; }
  [[nodiscard]] std::size_t bytes() const override { return bytes_; }

 private:
  std::shared_ptr<CachingAllocator> allocator_;
  CachingAllocator::Block block_;
  std::size_t bytes_;
};

}  // namespace spsim::rt::cuda_detail
