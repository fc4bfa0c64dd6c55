// CudaDevice elementwise and layout ops: add, scale, slice, slice_assign, concat, permute.
#include <string>

#include "runtime/cuda/detail/state.hpp"

namespace spsim::rt {

namespace {

int normalize_dim(const Tensor& t, int dim, const char* what) {
  const int n = t.ndim();
  const int d = dim < 0 ? dim + n : dim;
  if (d < 0 || d >= n)
    throw RuntimeError(std::string(what) + ": dim " + std::to_string(dim) + " out of range for " +
                       to_string(t.shape()));
  return d;
}

// t seen as [outer, shape[dim], inner].
struct Split3 {
  std::int64_t outer = 1, extent = 0, inner = 1;
};
Split3 split_at(const Shape& shape, int dim) {
  Split3 s;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    const auto e = shape[static_cast<std::size_t>(i)];
    if (i < dim)
      s.outer *= e;
    else if (i == dim)
      s.extent = e;
    else
      s.inner *= e;
  }
  return s;
}

// Shapes equal except along `dim`.
bool same_except(const Shape& a, const Shape& b, int dim) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (static_cast<int>(i) != dim && a[i] != b[i]) return false;
  return true;
}

}  // namespace

void CudaDevice::add(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  if (a.numel() != b.numel() || a.numel() != out.numel())
    throw RuntimeError("add: sizes differ: " + to_string(a.shape()) + ", " + to_string(b.shape()) + " -> " +
                       to_string(out.shape()));
  cuda_detail::axpby(s_->dtype, s_->ptr(a, "add a"), s_->ptr(b, "add b"), s_->ptr(out, "add out"), a.numel(),
                     alpha, beta, s_->stream);
}

void CudaDevice::scale(Tensor& x, double alpha) {
  cuda_detail::OpScope scope(*s_, OpClass::elementwise);
  cuda_detail::scale(s_->dtype, s_->ptr(x, "scale"), x.numel(), alpha, s_->stream);
}

Tensor CudaDevice::slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  const int d = normalize_dim(x, dim, "slice");
  const Split3 sp = split_at(x.shape(), d);
  if (start < 0 || len < 0 || start + len > sp.extent)
    throw RuntimeError("slice: [" + std::to_string(start) + ", +" + std::to_string(len) + ") of dim " +
                       std::to_string(d) + " in " + to_string(x.shape()));
  Shape shape = x.shape();
  shape[static_cast<std::size_t>(d)] = len;
  Tensor out = empty(shape);
  cuda_detail::copy_block(s_->dtype, s_->ptr(x, "slice"), out.storage()->data(),
                          {sp.outer, len, sp.inner, sp.extent, start, len, 0}, false, s_->stream);
  return out;
}

void CudaDevice::slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  const int d = normalize_dim(dst, dim, "slice_assign");
  const Split3 sp = split_at(dst.shape(), d);
  const std::int64_t len = src.ndim() == dst.ndim() ? src.dim(d) : -1;
  if (!same_except(src.shape(), dst.shape(), d) || start < 0 || start + len > sp.extent)
    throw RuntimeError("slice_assign: " + to_string(src.shape()) + " at " + std::to_string(start) +
                       " of dim " + std::to_string(d) + " in " + to_string(dst.shape()));
  cuda_detail::copy_block(s_->dtype, s_->ptr(src, "slice_assign src"), s_->ptr(dst, "slice_assign dst"),
                          {sp.outer, len, sp.inner, len, 0, sp.extent, start}, accumulate, s_->stream);
}

Tensor CudaDevice::concat(std::span<const Tensor> parts, int dim) {
  if (parts.empty()) throw RuntimeError("concat: no parts");
  const int d = normalize_dim(parts[0], dim, "concat");
  Shape shape = parts[0].shape();
  std::int64_t total = 0;
  for (const Tensor& p : parts) {
    if (!same_except(p.shape(), shape, d))
      throw RuntimeError("concat: " + to_string(p.shape()) + " does not match " + to_string(shape) +
                         " outside dim " + std::to_string(d));
    total += p.dim(d);
  }
  shape[static_cast<std::size_t>(d)] = total;
  Tensor out = empty(shape);
  std::int64_t at = 0;
  for (const Tensor& p : parts) {
    slice_assign(out, d, at, p);
    at += p.dim(d);
  }
  return out;
}

Tensor CudaDevice::permute(const Tensor& x, std::span<const int> perm) {
  cuda_detail::OpScope scope(*s_, OpClass::copy);
  const int n = x.ndim();
  if (static_cast<int>(perm.size()) != n || n > 4)
    throw RuntimeError("permute: " + std::to_string(perm.size()) + " axes for " + to_string(x.shape()) +
                       " (at most 4-D)");
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (int p : perm) {
    if (p < 0 || p >= n || seen[static_cast<std::size_t>(p)])
      throw RuntimeError("permute: the axes are not a permutation of 0.." + std::to_string(n - 1));
    seen[static_cast<std::size_t>(p)] = true;
  }
  // Pad to 4-D with leading unit dims; perm shifts by the padding.
  const int pad = 4 - n;
  cuda_detail::Index dims[4] = {1, 1, 1, 1};
  int p4[4] = {0, 1, 2, 3};
  Shape out_shape(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    dims[pad + i] = x.dim(i);
    p4[pad + i] = pad + perm[static_cast<std::size_t>(i)];
    out_shape[static_cast<std::size_t>(i)] = x.dim(perm[static_cast<std::size_t>(i)]);
  }
  Tensor out = empty(out_shape);
  cuda_detail::permute(dtype_bytes(s_->dtype), s_->ptr(x, "permute"), out.storage()->data(), dims, p4,
                       s_->stream);
  return out;
}

}  // namespace spsim::rt
