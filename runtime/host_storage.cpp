// Aligned host allocations and the buffer cache.
#include "runtime/host_storage.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace spsim::rt {

namespace {
constexpr std::size_t kAlign = 64;
constexpr std::size_t kMapThreshold = std::size_t{16} << 20;  // bytes

// Large buffers are mapped with MAP_POPULATE: the kernel fills the whole range in one call instead of
// taking one page fault per 4 KiB page on first touch, which (with P rank threads faulting at once)
// otherwise costs more time than the arithmetic of a long gradient check.
void* aligned(std::size_t rounded) {
  if (rounded >= kMapThreshold) {
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void release(void* p, std::size_t rounded) {
  if (rounded >= kMapThreshold)
    munmap(p, rounded);
  else
    std::free(p);
}
}  // namespace

std::size_t HostPool::round_up(std::size_t bytes) {
  const std::size_t r = (bytes + kAlign - 1) / kAlign * kAlign;
  return r == 0 ? kAlign : r;
}

HostPool::HostPool(std::size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

HostPool::~HostPool() {
  for (auto& [bytes, list] : free_)
    for (void* p : list) release(p, bytes);
}

void* HostPool::take(std::size_t bytes) {
  {
    std::lock_guard lock(mu_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= bytes;
      return p;
    }
  }
  return aligned(bytes);
}

void HostPool::give(void* data, std::size_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (cached_bytes_ + bytes <= max_cached_bytes_) {
      free_[bytes].push_back(data);
      cached_bytes_ += bytes;
      return;
    }
  }
  release(data, bytes);
}

HostStorage::HostStorage(std::size_t bytes, std::shared_ptr<HostPool> pool) : bytes_(bytes), pool_(std::move(pool)) {
  const std::size_t rounded = HostPool::round_up(bytes);
  data_ = pool_ ? pool_->take(rounded) : aligned(rounded);
}

HostStorage::~HostStorage() {
  if (pool_)
    pool_->give(data_, HostPool::round_up(bytes_));
  else
    release(data_, HostPool::round_up(bytes_));
}

Tensor make_host_tensor(const Shape& shape, DType dtype, std::shared_ptr<HostPool> pool) {
  const auto bytes = static_cast<std::size_t>(numel(shape)) * dtype_bytes(dtype);
  return Tensor(std::make_shared<HostStorage>(bytes, std::move(pool)), shape, dtype);
}

std::shared_ptr<HostPool> pool_of(const Tensor& t) {
  const auto* hs = dynamic_cast<const HostStorage*>(t.storage());
  return hs ? hs->pool() : nullptr;
}

}  // namespace spsim::rt
