// Internal to the CPU device: Eigen map types, argument checks and the typed op kernels (T = float, double).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/device.hpp"

namespace spsim::rt::cpu {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<Mat<T>>;
template <class T>
using ConstMatMap = Eigen::Map<const Mat<T>>;
template <class T>
using Col = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ColMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstColMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Throws RuntimeError("cpu <op>: <message>").
[[noreturn]] void fail(std::string_view op, const std::string& message);

// Checks that `t` is a defined host tensor of element type T; returns its data.
template <class T>
[[nodiscard]] T* data_of(Tensor& t, std::string_view op, std::string_view arg);
template <class T>
[[nodiscard]] const T* data_of(const Tensor& t, std::string_view op, std::string_view arg);

void expect_shape(const Tensor& t, const Shape& want, std::string_view op, std::string_view arg);

// A tensor of rank >= 2 seen as `batch` row-major matrices of rows x cols (leading dims flattened).
struct Batched {
  std::int64_t batch = 1, rows = 0, cols = 0;
  [[nodiscard]] std::int64_t stride() const { return rows * cols; }
};
[[nodiscard]] Batched batched(const Tensor& t, std::string_view op, std::string_view arg);

// Batch broadcasting of device.hpp: an operand with `count` batches, in an op over n batches, serves
// batch i from its batch i / (n / count). Throws unless count divides n.
void check_broadcast(std::int64_t n, std::int64_t count, std::string_view op, std::string_view arg);
[[nodiscard]] inline std::int64_t source_batch(std::int64_t i, std::int64_t n, std::int64_t count) {
  return i / (n / count);
}

// An attention mask restricted to one block of rows x cols, classified once per op call.
enum class MaskKind : std::uint8_t { all, partial, none };  // all pairs allowed / some / no pair
// Masked scores are never set to -inf before the exp: Eigen's vectorised exp(-inf) is the smallest
// normal number (not 0) and is ~4x slower than a finite argument, and the tiny values it leaves turn
// into denormals in the following GEMM (100x slower). Instead the row max is taken over scores + bias,
// and exp(min(s - m, 0)) is multiplied by keep, which is exact 0 where masked.
template <class T>
struct MaskPlan {
  MaskKind kind = MaskKind::all;
  Mat<T> bias;  // partial only: 0 where allowed, -inf where masked (for row maxima)
  Mat<T> keep;  // partial only: 1 where allowed, 0 where masked (multiplies exp(scores))
};
template <class T>
[[nodiscard]] MaskPlan<T> plan_mask(const Mask& mask, std::int64_t rows, std::int64_t cols,
                                    std::string_view op);

// ---- kernels (explicitly instantiated for float and double) ----------------------------------
template <class T>
void gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha, double beta);
template <class T>
void linear(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y);
template <class T>
void linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db,
                     bool accumulate_dx);

template <class T>
void softmax(const Tensor& x, Tensor& y, double scale, const Mask& mask);
template <class T>
void softmax_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double scale);
template <class T>
void attention_block_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o, Tensor& lse,
                             double scale, const Mask& mask);
template <class T>
void attention_block_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o,
                              const Tensor& d_o, const Tensor& lse, Tensor& dq, Tensor& dk, Tensor& dv,
                              double scale, const Mask& mask);
template <class T>
void merge_attention(Tensor& o, Tensor& lse, const Tensor& o_blk, const Tensor& lse_blk);

template <class T>
void fill(Tensor& t, double value);
template <class T>
void from_host(std::span<const double> values, Tensor& t);
template <class T>
void to_host(const Tensor& t, std::span<double> out);
template <class T>
void copy(const Tensor& src, Tensor& dst);  // same numel, any shapes
template <class T>
void add(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta);
template <class T>
void scale(Tensor& x, double alpha);
template <class T>
[[nodiscard]] Tensor slice(const Tensor& x, int dim, std::int64_t start, std::int64_t len);
template <class T>
void slice_assign(Tensor& dst, int dim, std::int64_t start, const Tensor& src, bool accumulate);
template <class T>
[[nodiscard]] Tensor concat(std::span<const Tensor> parts, int dim);
template <class T>
[[nodiscard]] Tensor permute(const Tensor& x, std::span<const int> perm);

template <class T>
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y, Tensor& mean,
                Tensor& rstd);
template <class T>
void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                         const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta, bool accumulate_dx);
template <class T>
void dropout(const Tensor& x, const Tensor& residual, Tensor& y, Tensor& mask, double p, std::uint64_t seed);
template <class T>
void dropout_backward(const Tensor& dy, const Tensor& mask, Tensor& dx, double p);
template <class T>
void gelu(const Tensor& x, Tensor& y);
template <class T>
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
template <class T>
void swiglu(const Tensor& gate, const Tensor& up, Tensor& y);
template <class T>
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup);

}  // namespace spsim::rt::cpu
