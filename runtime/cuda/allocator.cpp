// Caching device allocator and CudaStorage.
#include "runtime/cuda/detail/allocator.hpp"

#include <algorithm>
#include <string>

#include "runtime/cuda/detail/check.hpp"

namespace spsim::rt::cuda_detail {

namespace {
constexpr std::size_t kSmallRound = 512;       // bytes: cudaMalloc's own alignment granularity
constexpr std::size_t kLargeRound = 2u << 20;  // bytes: big blocks in 2 MiB steps, so sizes repeat
constexpr std::size_t kLargeThreshold = 1u << 20;

std::size_t round_request(std::size_t bytes) {
  const std::size_t step = bytes >= kLargeThreshold ? kLargeRound : kSmallRound;
  return std::max<std::size_t>(step, (bytes + step - 1) / step * step);
}
}  // namespace

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() noexcept {
  if (free_.empty()) return;
  cudaSetDevice(device_);
  for (auto& [bytes, ptr] : free_) {
    cudaFree(ptr);  // synchronizes the device, so no queued kernel still uses the block
    stats_.reserved_bytes -= bytes;
  }
  free_.clear();
}

CachingAllocator::Block CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t want = round_request(bytes);
  std::lock_guard lock(mutex_);
  Block block;
  if (auto it = free_.lower_bound(want); it != free_.end() && it->first <= 2 * want) {
    block = {it->second, it->first};
    free_.erase(it);
  } else {
    SPSIM_CUDA_CHECK(cudaSetDevice(device_));
    cudaError_t err = cudaMalloc(&block.ptr, want);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the error before retrying
      empty_cache_locked();
      err = cudaMalloc(&block.ptr, want);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      throw RuntimeError("cudaMalloc of " + std::to_string(want) + " bytes on GPU " +
                         std::to_string(device_) + " failed (" + cudaGetErrorString(err) + "); in use " +
                         std::to_string(stats_.in_use_bytes) + " bytes, reserved " +
                         std::to_string(stats_.reserved_bytes) + " bytes");
    }
    block.bytes = want;
    stats_.reserved_bytes += want;
  }
  stats_.in_use_bytes += block.bytes;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return block;
}

void CachingAllocator::release(Block block) noexcept {
  if (!block.ptr) return;
  std::lock_guard lock(mutex_);
  stats_.in_use_bytes -= block.bytes;
  free_.emplace(block.bytes, block.ptr);
}

CudaMemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

CudaStorage::CudaStorage(std::shared_ptr<CachingAllocator> allocator, std::size_t bytes)
    : allocator_(std::move(allocator)), block_(allocator_->allocate(bytes)), bytes_(bytes) {}

}  // namespace spsim::rt::cuda_detail
