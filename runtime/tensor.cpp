// Tensor metadata, dtype names and storage identities.
#include "runtime/tensor.hpp"

#include <atomic>

namespace spsim::rt {

namespace {
std::atomic<std::uint64_t> next_storage_id{1};
}

Storage::Storage() : id_(next_storage_id.fetch_add(1, std::memory_order_relaxed)) {}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype) {
  for (auto d : shape_)
    if (d < 0) throw RuntimeError("negative dimension in shape " + to_string(shape_));
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int k = i < 0 ? i + n : i;
  if (k < 0 || k >= n)
    throw RuntimeError("dim " + std::to_string(i) + " out of range for " + to_string(shape_));
  return shape_[static_cast<std::size_t>(k)];
}

Tensor Tensor::reshape(Shape shape) const {
  if (rt::numel(shape) != numel())
    throw RuntimeError("reshape " + to_string(shape_) + " -> " + to_string(shape) + " changes numel");
  return Tensor(storage_, std::move(shape), dtype_);
}

void Tensor::check_type(DType want) const {
  if (!storage_) throw RuntimeError("access to an undefined tensor");
  if (want != dtype_)
    throw RuntimeError("tensor of " + std::string(dtype_name(dtype_)) + " accessed as " +
                       std::string(dtype_name(want)));
}

}  // namespace spsim::rt
