// Batched GEMM through cuBLAS (strided-batched when the batch mapping is affine, pointer arrays otherwise).
//
// Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ, and a row-major buffer read as
// column-major is the transpose; so cuBLAS is called with the operands swapped and the same Trans flags:
// (m, n, k)_cublas = (n, m, k), A_cublas = B (ld = B's stored cols), B_cublas = A (ld = A's stored cols).
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "runtime/cuda/detail/check.hpp"
#include "runtime/cuda/detail/state.hpp"

namespace spsim::rt::cuda_detail {

namespace {

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f64:
      return CUDA_R_64F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

int as_int(Index v, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw RuntimeError(std::string("gemm: ") + what + " " + std::to_string(v) + " exceeds int");
  return static_cast<int>(v);
}

// Scalars in the compute type: cuBLAS reads alpha/beta as double for 64F compute, float otherwise.
struct Scalars {
  double d_alpha, d_beta;
  float f_alpha, f_beta;
  bool is_double;
  [[nodiscard]] const void* alpha() const {
    return is_double ? static_cast<const void*>(&d_alpha) : &f_alpha;
  }
  [[nodiscard]] const void* beta() const { return is_double ? static_cast<const void*>(&d_beta) : &f_beta; }
};

// idx[j] = source batch of output batch j for round r; affine when idx[j] = idx[0] + j * stride.
bool affine(const std::vector<Index>& idx, Index& stride) {
  stride = idx.size() > 1 ? idx[1] - idx[0] : 0;
  for (std::size_t j = 1; j < idx.size(); ++j)
    if (idx[j] - idx[j - 1] != stride) return false;
  return true;
}

struct Geometry {
  int m, n, k;                   // of the row-major product C[m, n] = op(A)[m, k] op(B)[k, n]
  int lda, ldb, ldc;             // stored row lengths
  Index a_size, b_size, c_size;  // elements per batch
};

Geometry geometry(const MatRef& a, const MatRef& b, Trans ta, Trans tb) {
  const Index m = ta == Trans::N ? a.rows : a.cols, ka = ta == Trans::N ? a.cols : a.rows;
  const Index kb = tb == Trans::N ? b.rows : b.cols, n = tb == Trans::N ? b.cols : b.rows;
  if (ka != kb)
    throw RuntimeError("gemm: inner dimensions differ (" + std::to_string(ka) + " vs " + std::to_string(kb) +
                       ")");
  return {as_int(m, "m"),
          as_int(n, "n"),
          as_int(ka, "k"),
          as_int(std::max<Index>(a.cols, 1), "lda"),
          as_int(std::max<Index>(b.cols, 1), "ldb"),
          as_int(std::max<Index>(n, 1), "ldc"),
          a.rows * a.cols,
          b.rows * b.cols,
          m * n};
}

}  // namespace

void batched_gemm(const CudaDevice::State& s, DType in, DType out, const MatRef& a, const MatRef& b, void* c,
                  Index c_batch, Trans ta, Trans tb, double alpha, double beta) {
  const Geometry g = geometry(a, b, ta, tb);
  const Index nb = std::max({a.batch, b.batch, c_batch});
  if (nb == 0 || g.m == 0 || g.n == 0) return;
  if (nb % a.batch || nb % b.batch || nb % c_batch)
    throw RuntimeError("gemm: batch counts " + std::to_string(a.batch) + ", " + std::to_string(b.batch) +
                       ", " + std::to_string(c_batch) + " do not divide the largest");
  if (g.k == 0) {  // empty sum: c = beta c
    if (beta == 0.0)
      fill(out, c, c_batch * g.c_size, 0.0, s.stream);
    else
      scale(out, c, c_batch * g.c_size, beta, s.stream);
    return;
  }
  const std::size_t in_bytes = dtype_bytes(in), out_bytes = dtype_bytes(out);
  const bool f64 = in == DType::f64;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const cublasOperation_t op_a = ta == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_b = tb == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  const auto* pa = static_cast<const char*>(a.ptr);
  const auto* pb = static_cast<const char*>(b.ptr);
  auto* pc = static_cast<char*>(c);
  const int batches = as_int(c_batch, "batch");
  const Index rounds = nb / c_batch;  // > 1 when c receives a sum over broadcast batches

  for (Index r = 0; r < rounds; ++r) {
    const Scalars sc{alpha, r == 0 ? beta : 1.0, static_cast<float>(alpha),
                     static_cast<float>(r == 0 ? beta : 1.0), f64};
    std::vector<Index> ia(static_cast<std::size_t>(c_batch)), ib(ia.size());
    for (Index j = 0; j < c_batch; ++j) {
      const Index i = j * rounds + r;
      ia[static_cast<std::size_t>(j)] = i / (nb / a.batch);
      ib[static_cast<std::size_t>(j)] = i / (nb / b.batch);
    }
    Index sa = 0, sb = 0;
    if (affine(ia, sa) && affine(ib, sb)) {
      SPSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          s.blas, op_b, op_a, g.n, g.m, g.k, sc.alpha(), pb + ib[0] * g.b_size * in_bytes, cuda_type(in),
          g.ldb, sb * g.b_size, pa + ia[0] * g.a_size * in_bytes, cuda_type(in), g.lda, sa * g.a_size,
          sc.beta(), pc, cuda_type(out), g.ldc, g.c_size, batches, compute, CUBLAS_GEMM_DEFAULT));
      continue;
    }
    // Pointer arrays [A_cublas..., B_cublas..., C...] uploaded in one copy; stream order keeps the
    // scratch alive long enough (see allocator.hpp).
    std::vector<const void*> ptrs(3 * ia.size());
    for (std::size_t j = 0; j < ia.size(); ++j) {
      ptrs[j] = pb + ib[j] * g.b_size * in_bytes;
      ptrs[ia.size() + j] = pa + ia[j] * g.a_size * in_bytes;
      ptrs[2 * ia.size() + j] = pc + static_cast<Index>(j) * g.c_size * out_bytes;
    }
    auto buf = s.scratch(ptrs.size() * sizeof(void*));
    SPSIM_CUDA_CHECK(cudaMemcpyAsync(buf->data(), ptrs.data(), ptrs.size() * sizeof(void*),
                                     cudaMemcpyHostToDevice, s.stream));
    auto** dev = static_cast<void**>(buf->data());
    SPSIM_CUBLAS_CHECK(cublasGemmBatchedEx(s.blas, op_b, op_a, g.n, g.m, g.k, sc.alpha(), dev, cuda_type(in),
                                           g.ldb, dev + ia.size(), cuda_type(in), g.lda, sc.beta(),
                                           dev + 2 * ia.size(), cuda_type(out), g.ldc, batches, compute,
                                           CUBLAS_GEMM_DEFAULT));
    // The host vector `ptrs` is pageable: cudaMemcpyAsync has staged it before returning.
  }
}

}  // namespace spsim::rt::cuda_detail

namespace spsim::rt {

namespace {
cuda_detail::MatRef mat(const CudaDevice::State& s, const Tensor& t, const char* what) {
  if (t.ndim() != 2 && t.ndim() != 3)
    throw RuntimeError(std::string("gemm: ") + what + " must be 2-D or 3-D, got " + to_string(t.shape()));
  const bool batched = t.ndim() == 3;
  return {s.ptr(t, what), batched ? t.dim(0) : 1, t.dim(-2), t.dim(-1)};
}
}  // namespace

void CudaDevice::gemm(const Tensor& a, const Tensor& b, Tensor& c, Trans ta, Trans tb, double alpha,
                      double beta) {
  cuda_detail::OpScope scope(*s_, OpClass::gemm);
  const auto ma = mat(*s_, a, "a"), mb = mat(*s_, b, "b"), mc = mat(*s_, c, "c");
  const std::int64_t m = ta == Trans::N ? ma.rows : ma.cols, n = tb == Trans::N ? mb.cols : mb.rows;
  if (mc.rows != m || mc.cols != n)
    throw RuntimeError("gemm: c is " + to_string(c.shape()) + " but op(a) op(b) has " + std::to_string(m) +
                       " x " + std::to_string(n) + " per batch");
  cuda_detail::batched_gemm(*s_, s_->dtype, s_->dtype, ma, mb, s_->ptr(c, "c"), mc.batch, ta, tb, alpha,
                            beta);
}

}  // namespace spsim::rt
