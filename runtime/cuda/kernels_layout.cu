// Layout kernels: strided block copy/accumulate (slice, slice_assign, concat) and 4-D permute.
#include <cstdint>

#include "runtime/cuda/detail/numeric.cuh"

namespace spsim::rt::cuda_detail {
namespace {

template <class T, bool Accumulate>
__global__ void copy_block_kernel(const T* src, T* dst, BlockCopy b) {
  const Index n = b.outer * b.len * b.inner;
  SPSIM_GRID_STRIDE(i, n) {
    const Index inner = i % b.inner;
    const Index l = (i / b.inner) % b.len;
    const Index o = i / (b.inner * b.len);
    const Index s = (o * b.src_extent + b.src_start + l) * b.inner + inner;
    const Index d = (o * b.dst_extent + b.dst_start + l) * b.inner + inner;
    if constexpr (Accumulate) {
      dst[d] = convert<T>(convert<Acc<T>>(dst[d]) + convert<Acc<T>>(src[s]));
    } else {
      dst[d] = src[s];
    }
  }
}

// stride_of_out_dim[i]: the source stride (in elements) of output dim i.
struct PermuteGeometry {
  Index out_dims[4];
  Index stride_of_out_dim[4];
};

template <class U>
__global__ void permute_kernel(const U* src, U* dst, Index n, PermuteGeometry g) {
  SPSIM_GRID_STRIDE(i, n) {
    Index rest = i, offset = 0;
    for (int d = 3; d >= 0; --d) {
      offset += (rest % g.out_dims[d]) * g.stride_of_out_dim[d];
      rest /= g.out_dims[d];
    }
    dst[i] = src[offset];
  }
}

}  // namespace

void copy_block(DType dt, const void* src, void* dst, const BlockCopy& block, bool accumulate,
                cudaStream_t stream) {
  const Index n = block.outer * block.len * block.inner;
  if (n == 0) return;
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dst);
    if (accumulate)
      copy_block_kernel<T, true><<<grid_for(n), kThreads, 0, stream>>>(s, d, block);
    else
      copy_block_kernel<T, false><<<grid_for(n), kThreads, 0, stream>>>(s, d, block);
  });
  SPSIM_CUDA_CHECK_LAUNCH("copy_block_kernel");
}

void permute(std::size_t elem_bytes, const void* src, void* dst, const Index (&dims)[4], const int (&perm)[4],
             cudaStream_t stream) {
  Index strides[4];
  strides[3] = 1;
  for (int d = 2; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  PermuteGeometry g{};
  Index n = 1;
  for (int d = 0; d < 4; ++d) {
    g.out_dims[d] = dims[perm[d]];
    g.stride_of_out_dim[d] = strides[perm[d]];
    n *= dims[d];
  }
  if (n == 0) return;
  switch (elem_bytes) {
    case 2:
      permute_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(src),
                                                           static_cast<std::uint16_t*>(dst), n, g);
      break;
    case 4:
      permute_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const std::uint32_t*>(src),
                                                           static_cast<std::uint32_t*>(dst), n, g);
      break;
    case 8:
      permute_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const std::uint64_t*>(src),
                                                           static_cast<std::uint64_t*>(dst), n, g);
      break;
    default:
      throw RuntimeError("permute: unsupported element size " + std::to_string(elem_bytes));
  }
  SPSIM_CUDA_CHECK_LAUNCH("permute_kernel");
}

}  // namespace spsim::rt::cuda_detail
