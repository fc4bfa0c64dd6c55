// Aligned host allocations and the buffer cache.
#include "runtime/host_storage.hpp"

#include <cstdlib>
#include <new>

namespace spsim::rt {

namespace {
constexpr std::size_t kAlign = 64;

void* aligned(std::size_t rounded) {
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

std::size_t HostPool::round_up(std::size_t bytes) {
  const std::size_t r = (bytes + kAlign - 1) / kAlign * kAlign;
  return r == 0 ? kAlign : r;
}

HostPool::HostPool(std::size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}

HostPool::~HostPool() {
  for (auto& [bytes, list] : free_)
    for (void* p : list) std::free(p);
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
  std::free(data);
}

HostStorage::HostStorage(std::size_t bytes, std::shared_ptr<HostPool> pool) : bytes_(bytes), pool_(std::move(pool)) {
  const std::size_t rounded = HostPool::round_up(bytes);
  data_ = pool_ ? pool_->take(rounded) : aligned(rounded);
}

HostStorage::~HostStorage() {
  if (pool_)
    pool_->give(data_, HostPool::round_up(bytes_));
  else
    std::free(data_);
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
