// Chunk geometry, strided pack/unpack and flat chunking for the threads backend's collectives.
#include "runtime/threads/chunks.hpp"

#include <cstring>
#include <string>

namespace spsim::rt::threads_detail {

int normalize_dim(const Shape& shape, int dim, std::string_view op) {
  const int n = static_cast<int>(shape.size());
  const int d = dim < 0 ? dim + n : dim;
  if (d < 0 || d >= n)
    throw RuntimeError("threads comm: " + std::string(op) + ": dim " + std::to_string(dim) +
                       " out of range for " + to_string(shape));
  return d;
}

ChunkGeometry chunk_geometry(const Shape& shape, int dim, int parts, std::size_t elem_bytes,
                             std::string_view op) {
  const auto d = static_cast<std::size_t>(normalize_dim(shape, dim, op));
  if (shape[d] % parts != 0)
    throw RuntimeError("threads comm: " + std::string(op) + ": extent " + std::to_string(shape[d]) +
                       " of dim " + std::to_string(dim) + " of " + to_string(shape) +
                       " is not divisible by the group size " + std::to_string(parts));
  ChunkGeometry g;
  g.parts = parts;
  g.elem_bytes = elem_bytes;
  std::int64_t inner = 1;
  for (std::size_t i = 0; i < d; ++i) g.outer *= shape[i];
  for (std::size_t i = d + 1; i < shape.size(); ++i) inner *= shape[i];
  g.run = shape[d] / parts * inner;
  return g;
}

void pack_chunk(std::span<const std::byte> full, const ChunkGeometry& g, int j, std::span<std::byte> chunk) {
  const auto run_bytes = static_cast<std::size_t>(g.run) * g.elem_bytes;
  if (run_bytes == 0) return;
  for (std::int64_t o = 0; o < g.outer; ++o) {
    const auto src = static_cast<std::size_t>(o * g.parts + j) * run_bytes;
    std::memcpy(chunk.data() + static_cast<std::size_t>(o) * run_bytes, full.data() + src, run_bytes);
  }
}

void unpack_chunk(std::span<const std::byte> chunk, const ChunkGeometry& g, int j,
                  std::span<std::byte> full) {
  const auto run_bytes = static_cast<std::size_t>(g.run) * g.elem_bytes;
  if (run_bytes == 0) return;
  for (std::int64_t o = 0; o < g.outer; ++o) {
    const auto dst = static_cast<std::size_t>(o * g.parts + j) * run_bytes;
    std::memcpy(full.data() + dst, chunk.data() + static_cast<std::size_t>(o) * run_bytes, run_bytes);
  }
}

std::vector<std::span<std::byte>> equal_chunks(std::span<std::byte> buffer, int parts) {
  const std::size_t each = buffer.size() / static_cast<std::size_t>(parts);
  std::vector<std::span<std::byte>> chunks;
  for (int j = 0; j < parts; ++j) chunks.push_back(buffer.subspan(static_cast<std::size_t>(j) * each, each));
  return chunks;
}

std::vector<std::span<std::byte>> near_equal_chunks(std::span<std::byte> buffer, std::int64_t count,
                                                    int parts, std::size_t elem_bytes) {
  std::vector<std::span<std::byte>> chunks;
  std::size_t offset = 0;
  for (int j = 0; j < parts; ++j) {
    const std::int64_t n = count / parts + (j < count % parts ? 1 : 0);
    const auto bytes = static_cast<std::size_t>(n) * elem_bytes;
    chunks.push_back(buffer.subspan(offset, bytes));
    offset += bytes;
  }
  return chunks;
}

}  // namespace spsim::rt::threads_detail
