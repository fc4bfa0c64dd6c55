// Cutting a row-major tensor into P chunks: equal chunks along a dimension (strided when dim > 0) and
// near-equal ranges of a flat buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/tensor.hpp"

namespace spsim::rt::threads_detail {

// A tensor of shape [outer, parts * c, inner] (the dims before `dim` folded into outer, those after
// into inner) seen as `parts` chunks along the middle dim. Chunk j is `outer` runs of c * inner
// contiguous elements, run o starting at element (o * parts + j) * run.
struct ChunkGeometry {
  std::int64_t outer = 1;
  std::int64_t run = 0;  // elements: c * inner
  int parts = 1;
  std::size_t elem_bytes = 0;
  [[nodiscard]] std::size_t chunk_bytes() const { return static_cast<std::size_t>(outer * run) * elem_bytes; }
};

// `dim` may be negative (counts from the end). Throws RuntimeError naming `op` unless dim is in range
// and shape[dim] is divisible by parts.
[[nodiscard]] int normalize_dim(const Shape& shape, int dim, std::string_view op);
[[nodiscard]] ChunkGeometry chunk_geometry(const Shape& shape, int dim, int parts, std::size_t elem_bytes,
                                           std::string_view op);

// chunk <- chunk j of full, and full's chunk j <- chunk. chunk has geometry.chunk_bytes() bytes.
void pack_chunk(std::span<const std::byte> full, const ChunkGeometry& geometry, int j,
                std::span<std::byte> chunk);
void unpack_chunk(std::span<const std::byte> chunk, const ChunkGeometry& geometry, int j,
                  std::span<std::byte> full);

// The bytes of chunk j of every j when `buffer` holds the chunks one after another (chunk-major).
[[nodiscard]] std::vector<std::span<std::byte>> equal_chunks(std::span<std::byte> buffer, int parts);
// `count` elements cut into `parts` ranges, the first count % parts one element longer.
[[nodiscard]] std::vector<std::span<std::byte>> near_equal_chunks(std::span<std::byte> buffer,
                                                                  std::int64_t count, int parts,
                                                                  std::size_t elem_bytes);

}  // namespace spsim::rt::threads_detail
