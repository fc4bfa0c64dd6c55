// Argument checks, batched views and mask classification shared by the CPU kernels.
#include <algorithm>
#include <limits>

#include "runtime/cpu/detail/kernels.hpp"

namespace spsim::rt::cpu {

void fail(std::string_view op, const std::string& message) {
  throw RuntimeError("cpu " + std::string(op) + ": " + message);
}

namespace {
void check_host(const Tensor& t, DType want, std::string_view op, std::string_view arg) {
  if (!t.defined()) fail(op, "argument '" + std::string(arg) + "' is an undefined tensor");
  if (t.dtype() != want)
    fail(op, "argument '" + std::string(arg) + "' is " + std::string(dtype_name(t.dtype())) +
                 ", the device computes in " + std::string(dtype_name(want)));
  if (t.storage()->data() == nullptr && t.numel() > 0)
    fail(op, "argument '" + std::string(arg) + "' has no host data (a tensor of another backend?)");
}
}  // namespace

template <class T>
T* data_of(Tensor& t, std::string_view op, std::string_view arg) {
  check_host(t, dtype_of<T>(), op, arg);
  return static_cast<T*>(t.storage()->data());
}

template <class T>
const T* data_of(const Tensor& t, std::string_view op, std::string_view arg) {
  check_host(t, dtype_of<T>(), op, arg);
  return static_cast<const T*>(t.storage()->data());
}

void expect_shape(const Tensor& t, const Shape& want, std::string_view op, std::string_view arg) {
  if (t.shape() != want)
    fail(op, "argument '" + std::string(arg) + "' has shape " + to_string(t.shape()) + ", expected " +
                 to_string(want));
}

Batched batched(const Tensor& t, std::string_view op, std::string_view arg) {
  if (t.ndim() < 2)
    fail(op, "argument '" + std::string(arg) + "' must have rank >= 2, got shape " + to_string(t.shape()));
  Batched b;
  b.rows = t.dim(-2);
  b.cols = t.dim(-1);
  for (int i = 0; i + 2 < t.ndim(); ++i) b.batch *= t.dim(i);
  return b;
}

void check_broadcast(std::int64_t n, std::int64_t count, std::string_view op, std::string_view arg) {
  if (count <= 0 || n % count != 0)
    fail(op, "argument '" + std::string(arg) + "' has " + std::to_string(count) +
                 " batches, which does not divide the op's " + std::to_string(n) + " batches");
}

template <class T>
MaskPlan<T> plan_mask(const Mask& mask, std::int64_t rows, std::int64_t cols, std::string_view op) {
  MaskPlan<T> plan;
  if (!mask.masked()) return plan;
  if (mask.rows == nullptr || mask.cols == nullptr) fail(op, "an attention mask needs row and column positions");
  if (static_cast<std::int64_t>(mask.rows->size()) != rows ||
      static_cast<std::int64_t>(mask.cols->size()) != cols)
    fail(op, "mask has " + std::to_string(mask.rows->size()) + " x " + std::to_string(mask.cols->size()) +
                 " positions for a block of " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows == 0 || cols == 0) return plan;
  // Every pair allowed or none: counted on the runs, before any pair is visited.
  const std::int64_t pairs = allowed_pairs(*mask.rows, *mask.cols, mask.causal, mask.bounds);
  if (pairs == rows * cols) return plan;
  if (pairs == 0) {
    plan.kind = MaskKind::none;
    return plan;
  }
  plan.kind = MaskKind::partial;
  plan.keep.resize(rows, cols);
  const std::vector<std::int64_t> row_pos = mask.rows->expand(), col_pos = mask.cols->expand();
  const bool bounded = mask.bounded();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t pos = row_pos[static_cast<std::size_t>(r)];
    T* keep = plan.keep.row(r).data();
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t key = col_pos[static_cast<std::size_t>(c)];
      const bool ok = (!mask.causal || key <= pos) && (!bounded || mask.bounds->allows(pos, key));
      keep[c] = ok ? T(1) : T(0);
    }
  }
  plan.bias =
      (plan.keep.array() > T(0)).select(Mat<T>::Zero(rows, cols), -std::numeric_limits<T>::infinity());
  return plan;
}

#define SPSIM_INSTANTIATE(T)                                                       \
  template T* data_of<T>(Tensor&, std::string_view, std::string_view);             \
  template const T* data_of<T>(const Tensor&, std::string_view, std::string_view); \
  template MaskPlan<T> plan_mask<T>(const Mask&, std::int64_t, std::int64_t, std::string_view);
SPSIM_INSTANTIATE(float)
SPSIM_INSTANTIATE(double)
#undef SPSIM_INSTANTIATE

}  // namespace spsim::rt::cpu
