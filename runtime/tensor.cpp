// Tensor metadata, dtype names and storage identities.
#include "runtime/tensor.hpp"

#include <atomic>

namespace spsim::rt {

namespace {
std::atomic<std::uint64_t> next_storage_id{1};
}

Storage::Storage() : id_(next_storage_id.fetch_add(1, std::memory_order_relaxed)) {}

std::size_t dtype_bytes(DType dt) {
  switch (dt) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bf16:
    case DType::f16: return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dt) {
  switch (dt) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "float32" || n == "f32" || n == "fp32") return DType::f32;
  if (n == "float64" || n == "f64" || n == "fp64") return DType::f64;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "fp16" || n == "f16" || n == "float16") return DType::f16;
  return std::nullopt;
}

std::int64_t numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype) {
  for (auto d : shape_)
    if (d < 0) throw RuntimeError("negative dimension in shape " + to_string(shape_));
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int k = i < 0 ? i + n : i;
  if (k < 0 || k >= n) throw RuntimeError("dim " + std::to_string(i) + " out of range for " + to_string(shape_));
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
