// CPU memory, elementwise and layout ops: fill, host transfer, add/scale, slice/concat, permute.
#include <algorithm>
#include <numeric>

#include "runtime/cpu/detail/kernels.hpp"
#include "runtime/host_storage.hpp"

namespace spsim::rt::cpu {

namespace {

// A tensor seen as [outer, extent, inner] around dimension `dim` (negative counts from the end).
struct Slab {
  std::int64_t outer = 1, extent = 0, inner = 1;
  int dim = 0;
};

Slab slab(const Tensor& t, int dim, std::string_view op, std::string_view arg) {
  const int n = t.ndim();
  const int d = dim < 0 ? dim + n : dim;
  if (d < 0 || d >= n)
    fail(op, "dim " + std::to_string(dim) + " is out of range for argument '" + std::string(arg) +
                 "' of shape " + to_string(t.shape()));
  Slab s;
  s.dim = d;
  s.extent = t.dim(d);
  for (int i = 0; i < d; ++i) s.outer *= t.dim(i);
  for (int i = d + 1; i < n; ++i) s.inner *= t.dim(i);
  return s;
}

// Shapes equal except along `dim`.
bool same_but(const Shape& a, const Shape& b, int dim) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (static_cast<int>(i) != dim && a[i] != b[i]) return false;
  return true;
}

// dst[:, at:at+extent, :] (= or +=) src, both viewed around the same dim.
template <class T>
void copy_slab(const T* src, const Slab& s, T* dst, const Slab& d, std::int64_t at, bool accumulate) {
  const std::int64_t run = s.extent * s.inner;  // contiguous elements per outer index
  for (std::int64_t o = 0; o < s.outer; ++o) {
    const T* from = src + o * run;
    T* to = dst + (o * d.extent + at) * d.inner;
    if (accumulate)
      ColMap<T>(to, run) += ConstColMap<T>(from, run);
    else
      std::copy_n(from, run, to);
  }
}

}  // namespace

template <class T>
void fill(Tensor& t, double value) {
  ColMap<T>(data_of<T>(t, "fill", "t"), t.numel()).setConstant(static_cast<T>(value));
}

template <class T>
void from_host(std::span<const double> values, Tensor& t) {
  T* p = data_of<T>(t, "from_host", "t");
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    fail("from_host", std::to_string(values.size()) + " values for shape " + to_string(t.shape()));
  std::transform(values.begin(), values.end(), p, [](double v) { return static_cast<T>(v); });
}

template <class T>
void to_host(const Tensor& t, std::span<double> out) {
  const T* p = data_of<T>(t, "to_host", "t");
  std::transform(p, p + t.numel(), out.begin(), [](T v) { return static_cast<double>(v); });
}

template <class T>
void copy(const Tensor& src, Tensor& dst) {
  const T* ps = data_of<T>(src, "copy", "src");
  T* pd = data_of<T>(dst, "copy", "dst");
  if (src.numel() != dst.numel())
    fail("copy", "src " + to_string(src.shape()) + " and dst " + to_string(dst.shape()) + " differ in numel");
  if (ps != pd) std::copy_n(ps, src.numel(), pd);
}

template <class T>
void add(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  constexpr std::string_view op = "add";
  const T* pa = data_of<T>(a, op, "a");
  const T* pb = data_of<T>(b, op, "b");
  T* po = data_of<T>(out, op, "out");
  expect_shape(b, a.shape(), op, "b");
  expect_shape(out, a.shape(), op, "out");
  const std::int64_t n = a.numel();
  // Coefficient-wise, so out may alias a or b.
  ColMap<T>(po, n) =
      static_cast<T>(alpha) * ConstColMap<T>(pa, n) + static_cast<T>(beta) * ConstColMap<T>(pb, n);
}

template <class T>
void scale(Tensor& x, double alpha) {
  ColMap<T>(data_of<T>(x, "scale", "x"), x.numel()) *= static_cast<T>(alpha);
}

template <class T>
Tensor slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len) {
  constexpr std::string_view op = "slice";
  const T* px = data_of<T>(x, op, "x");
  const Slab xs = slab(x, dim, op, "x");
  if (start < 0 || len < 0 || start + len > xs.extent)
    fail(op, "range [" + std::to_string(start) + ", " + std::to_string(start + len) + ") is outside dim " +
                 std::to_string(dim) + " of shape " + to_string(x.shape()));
  Shape shape = x.shape();
  shape[static_cast<std::size_t>(xs.dim)] = len;
  Tensor out = make_host_tensor(shape, dtype_of<T>(), pool_of(x));
  T* po = out.data<T>();
  for (std::int64_t o = 0; o < xs.outer; ++o)
    std::copy_n(px + (o * xs.extent + start) * xs.inner, len * xs.inner, po + o * len * xs.inner);
  return out;
}

template <class T>
void slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate) {
  constexpr std::string_view op = "slice_assign";
  T* pd = data_of<T>(dst, op, "dst");
  const T* ps = data_of<T>(src, op, "src");
  if (dst.storage() == src.storage()) fail(op, "src shares storage with dst");
  const Slab ds = slab(dst, dim, op, "dst");
  if (!same_but(dst.shape(), src.shape(), ds.dim))
    fail(op, "src " + to_string(src.shape()) + " does not match dst " + to_string(dst.shape()) +
                 " outside dim " + std::to_string(dim));
  const Slab ss = slab(src, dim, op, "src");
  if (start < 0 || start + ss.extent > ds.extent)
    fail(op, "range [" + std::to_string(start) + ", " + std::to_string(start + ss.extent) +
                 ") is outside dim " + std::to_string(dim) + " of dst " + to_string(dst.shape()));
  copy_slab(ps, ss, pd, ds, start, accumulate);
}

template <class T>
Tensor concat(std::span<const Tensor> parts, int dim) {
  constexpr std::string_view op = "concat";
  if (parts.empty()) fail(op, "no tensors to concatenate");
  (void)data_of<T>(parts[0], op, "parts[0]");
  const Slab first = slab(parts[0], dim, op, "parts[0]");
  Shape shape = parts[0].shape();
  std::int64_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string arg = "parts[" + std::to_string(i) + "]";
    (void)data_of<T>(parts[i], op, arg);
    if (!same_but(parts[i].shape(), shape, first.dim))
      fail(op, arg + " " + to_string(parts[i].shape()) + " does not match parts[0] " + to_string(shape) +
                   " outside dim " + std::to_string(dim));
    total += parts[i].dim(first.dim);
  }
  shape[static_cast<std::size_t>(first.dim)] = total;
  Tensor out = make_host_tensor(shape, dtype_of<T>(), pool_of(parts[0]));
  const Slab os = slab(out, first.dim, op, "out");
  std::int64_t at = 0;
  for (const Tensor& part : parts) {
    const Slab ps = slab(part, first.dim, op, "part");
    copy_slab(part.data<T>(), ps, out.data<T>(), os, at, false);
    at += ps.extent;
  }
  return out;
}

template <class T>
Tensor permute(const Tensor& x, std::span<const int> perm) {
  constexpr std::string_view op = "permute";
  const T* px = data_of<T>(x, op, "x");
  const int n = x.ndim();
  std::vector<int> sorted(perm.begin(), perm.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(static_cast<std::size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) fail(op, "perm is not a permutation of the " + std::to_string(n) + " dims of x");

  std::vector<std::int64_t> x_stride(static_cast<std::size_t>(n), 1);
  for (int i = n - 2; i >= 0; --i)
    x_stride[static_cast<std::size_t>(i)] = x_stride[static_cast<std::size_t>(i) + 1] * x.dim(i + 1);
  Shape shape(static_cast<std::size_t>(n));
  std::vector<std::int64_t> stride(static_cast<std::size_t>(n));  // x's stride along each output dim
  for (std::size_t j = 0; j < shape.size(); ++j) {
    shape[j] = x.dim(perm[j]);
    stride[j] = x_stride[static_cast<std::size_t>(perm[j])];
  }
  Tensor out = make_host_tensor(shape, dtype_of<T>(), pool_of(x));
  T* po = out.data<T>();
  if (out.numel() == 0) return out;
  if (n == 0) {
    po[0] = px[0];
    return out;
  }
  // Walk the output in row-major order: an odometer over all but the last output dim, and a strided
  // (or, when the last dim stays last, contiguous) run along the last one.
  const std::int64_t run = shape.back(), step = stride.back();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n), 0);
  std::int64_t from = 0;
  for (std::int64_t o = 0, runs = out.numel() / run; o < runs; ++o, po += run) {
    if (step == 1)
      std::copy_n(px + from, run, po);
    else
      for (std::int64_t t = 0; t < run; ++t) po[t] = px[from + t * step];
    for (int j = n - 2; j >= 0; --j) {
      const auto u = static_cast<std::size_t>(j);
      from += stride[u];
      if (++idx[u] < shape[u]) break;
      from -= stride[u] * shape[u];
      idx[u] = 0;
    }
  }
  return out;
}

#define SPSIM_INSTANTIATE(T)                                                      \
  template void fill<T>(Tensor&, double);                                         \
  template void from_host<T>(std::span<const double>, Tensor&);                   \
  template void to_host<T>(const Tensor&, std::span<double>);                     \
  template void copy<T>(const Tensor&, Tensor&);                                  \
  template void add<T>(const Tensor&, const Tensor&, Tensor&, double, double);    \
  template void scale<T>(Tensor&, double);                                        \
  template Tensor slice<T>(const Tensor&, int, std::int64_t, std::int64_t);       \
  template void slice_assign<T>(Tensor&, int, std::int64_t, const Tensor&, bool); \
  template Tensor concat<T>(std::span<const Tensor>, int);                        \
  template Tensor permute<T>(const Tensor&, std::span<const int>);
SPSIM_INSTANTIATE(float)
SPSIM_INSTANTIATE(double)
#undef SPSIM_INSTANTIATE

}  // namespace spsim::rt::cpu
