// Device-side helpers shared by the .cu files: dtype dispatch, conversions, math overloads, block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/cuda/detail/check.hpp"
#include "runtime/cuda/detail/kernels.hpp"

namespace spsim::rt::cuda_detail {

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the C++ element type of dt.
template <class F>
void dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(Tag<float>{});
      return;
    case DType::f64:
      f(Tag<double>{});
      return;
    case DType::bf16:
      f(Tag<__nv_bfloat16>{});
      return;
    case DType::f16:
      f(Tag<__half>{});
      return;
  }
}

// Accumulation type: fp64 for fp64, fp32 otherwise.
template <class T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <class T>
using Acc = typename AccOf<T>::type;

// Value conversion between any two element types (bf16/fp16 go through fp32, except from fp64).
template <class To, class From>
__device__ __forceinline__ To convert(From x) {
  if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(x));
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(x));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    if constexpr (std::is_same_v<From, double>)
      return __double2bfloat16(x);
    else
      return __float2bfloat16(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, __half>) {
    if constexpr (std::is_same_v<From, double>)
      return __double2half(x);
    else
      return __float2half(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

__device__ __forceinline__ float exp_(float x) {
  return expf(x);
}
__device__ __forceinline__ double exp_(double x) {
  return exp(x);
}
__device__ __forceinline__ float log_(float x) {
  return logf(x);
}
__device__ __forceinline__ double log_(double x) {
  return log(x);
}
__device__ __forceinline__ float rsqrt_(float x) {
  return rsqrtf(x);
}
__device__ __forceinline__ double rsqrt_(double x) {
  return rsqrt(x);
}
__device__ __forceinline__ float erf_(float x) {
  return erff(x);
}
__device__ __forceinline__ double erf_(double x) {
  return erf(x);
}

template <class A>
__device__ __forceinline__ A neg_inf() {
  return -static_cast<A>(INFINITY);
}

struct SumOp {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct MaxOp {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a > b ? a : b;
  }
};

// Reduction over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` is 32 shared elements. The fixed combination order keeps results deterministic.
template <class A, class Op>
__device__ A block_reduce(A v, Op op, A* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous reduction's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  A r = scratch[0];
  const int warps = static_cast<int>(blockDim.x >> 5);
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

// Launch geometry for grid-stride elementwise kernels.
constexpr int kThreads = 256;
inline unsigned grid_for(Index n) {
  const Index blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<Index>(blocks, 1, 65535));
}
// Threads per row for one-block-per-row kernels: enough warps for the row, at most kThreads.
inline unsigned row_threads(Index cols) {
  const Index warps = std::clamp<Index>((cols + 31) / 32, 1, kThreads / 32);
  return static_cast<unsigned>(warps * 32);
}

#define SPSIM_GRID_STRIDE(i, n)                                                      \
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<Index>(gridDim.x) * blockDim.x)

}  // namespace spsim::rt::cuda_detail
