// Shared helpers of the MPI tests: the value every rank fills in, and multi-index arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/host_storage.hpp"
#include "runtime/tensor.hpp"

namespace spsim::test {

// What rank r holds at flat index i of its input. Small integers: a sum over up to 4 ranks of tensors
// up to 2^20 elements stays below 2^24, so float32 results are exact and the tests compare with ==.
[[nodiscard]] inline double value(int rank, std::int64_t i) {
  return rank * 1000.0 + static_cast<double>(i);
}

template <class T>
[[nodiscard]] rt::Tensor filled(const rt::Shape& shape, int rank) {
  rt::Tensor t = rt::make_host_tensor(shape, rt::dtype_of<T>());
  T* p = t.data<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(value(rank, i));
  return t;
}

// Flat row-major index <-> multi-index.
[[nodiscard]] inline std::vector<std::int64_t> unravel(const rt::Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    idx[k] = flat % shape[k];
    flat /= shape[k];
  }
  return idx;
}

[[nodiscard]] inline std::int64_t ravel(const rt::Shape& shape, const std::vector<std::int64_t>& idx) {
  std::int64_t flat = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + idx[k];
  return flat;
}

[[nodiscard]] inline rt::Shape scaled(rt::Shape shape, int dim, std::int64_t times, std::int64_t divide = 1) {
  shape[static_cast<std::size_t>(dim)] = shape[static_cast<std::size_t>(dim)] * times / divide;
  return shape;
}

// Number of tensor elements that differ from `expected(flat index)`; 0 when the tensor is right.
template <class T, class Expected>
[[nodiscard]] std::int64_t mismatches(const rt::Tensor& t, Expected expected) {
  const T* p = t.data<T>();
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (p[i] != static_cast<T>(expected(i))) ++bad;
  return bad;
}

}  // namespace spsim::test
