// Tensor: a shape, a dtype and a shared handle to backend-owned storage (row-major, contiguous).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/types.hpp"

namespace spsim::rt {

// Backend storage. Backends derive from it; the destructor is where a backend learns that a tensor's
// memory was released (the trace backend records the free there).
class Storage {
 public:
  virtual ~Storage() = default;
  [[nodiscard]] virtual void* data() = 0;  // nullptr for backends that carry no data (trace)
  [[nodiscard]] virtual std::size_t bytes() const = 0;
  [[nodiscard]] std::uint64_t id() const { return id_; }

 protected:
  Storage();

 private:
  std::uint64_t id_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype);

  [[nodiscard]] bool defined() const { return storage_ != nullptr; }
  [[nodiscard]] const Shape& shape() const { return shape_; }
  [[nodiscard]] int ndim() const { return static_cast<int>(shape_.size()); }
  [[nodiscard]] std::int64_t dim(int i) const;  // negative i counts from the end
  [[nodiscard]] std::int64_t numel() const { return rt::numel(shape_); }
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_bytes(dtype_); }
  [[nodiscard]] Storage* storage() const { return storage_.get(); }

  // Same storage, new shape (numel must match). Free: tensors are always contiguous.
  [[nodiscard]] Tensor reshape(Shape shape) const;

  // Typed access to host data (CPU backend). Throws RuntimeError if T does not match dtype().
  template <class T>
  [[nodiscard]] T* data();
  template <class T>
  [[nodiscard]] const T* data() const;

 private:
  void check_type(DType want) const;
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
};

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}

template <class T>
T* Tensor::data() {
  check_type(dtype_of<T>());
  return static_cast<T*>(storage_->data());
}
template <class T>
const T* Tensor::data() const {
  check_type(dtype_of<T>());
  return static_cast<const T*>(storage_->data());
}

}  // namespace spsim::rt
