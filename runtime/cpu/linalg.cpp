// CPU GEMM (Eigen's blocked GEMM, one call per batch) and the linear layer built on it.
#include <algorithm>

#include "runtime/cpu/detail/kernels.hpp"

namespace spsim::rt::cpu {

namespace {

// c += alpha op(a) op(b): noalias() keeps Eigen on its GEMM kernel without a temporary, and the
// transposes are folded into the kernel's packing rather than materialised.
template <class T, class A, class B, class C>
void multiply_add(const A& a, const B& b, C& c, Trans ta, Trans tb, T alpha) {
  if (ta == Trans::N && tb == Trans::N)
    c.noalias() += alpha * a * b;
  else if (ta == Trans::N)
    c.noalias() += alpha * a * b.transpose();
  else if (tb == Trans::N)
    c.noalias() += alpha * a.transpose() * b;
  else
    c.noalias() += alpha * a.transpose() * b.transpose();
}

// Product of all dims but the last (the "rows" of a row-wise layer op).
std::int64_t leading(const Tensor& t) {
  std::int64_t n = 1;
  for (int i = 0; i + 1 < t.ndim(); ++i) n *= t.dim(i);
  return n;
}

Shape with_last(Shape s, std::int64_t last) {
  s.back() = last;
  return s;
}

}  // namespace

template <class T>
void gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha, double beta) {
  constexpr std::string_view op = "gemm";
  const T* pa = data_of<T>(a, op, "a");
  const T* pb = data_of<T>(b, op, "b");
  T* pc = data_of<T>(c, op, "c");
  if (c.storage() == a.storage() || c.storage() == b.storage())
    fail(op, "output 'c' shares storage with an input");
  const Batched A = batched(a, op, "a"), B = batched(b, op, "b"), C = batched(c, op, "c");
  const std::int64_t m = ta == Trans::N ? A.rows : A.cols, ka = ta == Trans::N ? A.cols : A.rows;
  const std::int64_t kb = tb == Trans::N ? B.rows : B.cols, n = tb == Trans::N ? B.cols : B.rows;
  if (ka != kb || C.rows != m || C.cols != n)
    fail(op, "op(a) is " + std::to_string(m) + " x " + std::to_string(ka) + ", op(b) is " +
                 std::to_string(kb) + " x " + std::to_string(n) + ", c is " + std::to_string(C.rows) + " x " +
                 std::to_string(C.cols));
  const std::int64_t nb = std::max({A.batch, B.batch, C.batch});
  check_broadcast(nb, A.batch, op, "a");
  check_broadcast(nb, B.batch, op, "b");
  check_broadcast(nb, C.batch, op, "c");

  // beta = 0 overwrites c without reading it (as BLAS does), so stale NaNs never leak in.
  MatMap<T> c_all(pc, C.batch * m, n);
  if (beta == 0.0)
    c_all.setZero();
  else if (beta != 1.0)
    c_all *= static_cast<T>(beta);
  // Eigen computes a row-major product as its column-major transpose, in which op(a)ᵀ is the packed
  // right-hand side: with ta = T that packing gathers a few elements from each row of `a`, one page per
  // row, and for a large `a` (RSA's dK = dSᵀ Q over [s/P, s] score rows) the TLB misses cost more than
  // the arithmetic. Into a column-major temporary, aᵀ is the left-hand side instead, packed from
  // contiguous runs; the temporary (m × n, small next to `a` in those products) is then added to c.
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> col;  // allocated once, reused over the batch
  for (std::int64_t i = 0; i < nb; ++i) {
    const ConstMatMap<T> ai(pa + source_batch(i, nb, A.batch) * A.stride(), A.rows, A.cols);
    const ConstMatMap<T> bi(pb + source_batch(i, nb, B.batch) * B.stride(), B.rows, B.cols);
    MatMap<T> ci(pc + source_batch(i, nb, C.batch) * C.stride(), m, n);
    if (ta == Trans::T) {
      col.setZero(m, n);
      multiply_add(ai, bi, col, ta, tb, static_cast<T>(alpha));
      ci += col;
    } else {
      multiply_add(ai, bi, ci, ta, tb, static_cast<T>(alpha));
    }
  }
}

template <class T>
void linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  constexpr std::string_view op = "linear";
  const T* px = data_of<T>(x, op, "x");
  const T* pw = data_of<T>(w, op, "w");
  T* py = data_of<T>(y, op, "y");
  if (w.ndim() != 2 || x.ndim() < 1 || x.dim(-1) != w.dim(1))
    fail(op, "x " + to_string(x.shape()) + " and w " + to_string(w.shape()) +
                 " are not [rows, in] and [out, in]");
  const std::int64_t rows = leading(x), in = w.dim(1), out = w.dim(0);
  expect_shape(y, with_last(x.shape(), out), op, "y");
  if (y.storage() == x.storage() || y.storage() == w.storage())
    fail(op, "output 'y' shares storage with an input");
  const ConstMatMap<T> xm(px, rows, in), wm(pw, out, in);
  MatMap<T> ym(py, rows, out);
  ym.noalias() = xm * wm.transpose();
  if (b.defined()) {
    expect_shape(b, {out}, op, "b");
    ym.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(data_of<T>(b, op, "b"), out);
  }
}

template <class T>
void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db,
                     bool accumulate_dx) {
  constexpr std::string_view op = "linear_backward";
  const T* px = data_of<T>(x, op, "x");
  const T* pw = data_of<T>(w, op, "w");
  const T* pdy = data_of<T>(dy, op, "dy");
  if (w.ndim() != 2 || x.ndim() < 1 || x.dim(-1) != w.dim(1))
    fail(op, "x " + to_string(x.shape()) + " and w " + to_string(w.shape()) +
                 " are not [rows, in] and [out, in]");
  const std::int64_t rows = leading(x), in = w.dim(1), out = w.dim(0);
  expect_shape(dy, with_last(x.shape(), out), op, "dy");
  const ConstMatMap<T> xm(px, rows, in), wm(pw, out, in), dym(pdy, rows, out);
  if (dx.defined()) {  // checked before any output is written
    expect_shape(dx, x.shape(), op, "dx");
    if (dx.storage() == dy.storage() || dx.storage() == w.storage())
      fail(op, "output 'dx' shares storage with an input");
  }
  if (dw.defined()) {
    expect_shape(dw, w.shape(), op, "dw");
    MatMap<T> dwm(data_of<T>(dw, op, "dw"), out, in);
    dwm.noalias() += dym.transpose() * xm;
  }
  if (db.defined()) {
    expect_shape(db, {out}, op, "db");
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(data_of<T>(db, op, "db"), out) += dym.colwise().sum();
  }
  // dx last, so that dx may reuse x's storage.
  if (dx.defined()) {
    MatMap<T> dxm(data_of<T>(dx, op, "dx"), rows, in);
    if (accumulate_dx)
      dxm.noalias() += dym * wm;
    else
      dxm.noalias() = dym * wm;
  }
}

#define SPSIM_INSTANTIATE(T)                                                                               \
  template void gemm<T>(const Tensor&, const Tensor&, Tensor&, Trans, Trans, double, double);              \
  template void linear<T>(const Tensor&, const Tensor&, const Tensor&, Tensor&);                           \
  template void linear_backward<T>(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor&, \
                                   bool);
SPSIM_INSTANTIATE(float)
SPSIM_INSTANTIATE(double)
#undef SPSIM_INSTANTIATE

}  // namespace spsim::rt::cpu
