// Document lengths of a packed sequence drawn from a named distribution (workload.mask.documents as
// {distribution, …}), deterministic for a seed on every platform (SplitMix64, no <random>).
//
//   uniform      lengths uniform on [min_len, max_len]
//   exponential  lengths ⌈−mean_len · ln(1 − u)⌉, u uniform on [0, 1), clamped to [min_len, max_len]
//                (many short documents and a long tail, as in web-text corpora)
//
// With pad_to = m every drawn length is rounded up to a multiple of m (packed-sequence context
// parallelism pads each document to a multiple of 2·cp). Lengths are drawn until they cover the
// sequence; the last document is cut to end at seq_len (a multiple of m when seq_len is).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spsim::models {

struct DocumentDraw {
  std::string distribution = "uniform";  // one of document_distributions()
  std::int64_t min_len = 1;
  std::int64_t max_len = 1;
  std::int64_t mean_len = 1;  // exponential only
  std::int64_t pad_to = 1;    // lengths rounded up to a multiple of this
  std::uint64_t seed = 0;
};

[[nodiscard]] const std::vector<std::string>& document_distributions();

// Lengths (each ≥ 1) summing to seq_len ≥ 1. Throws RuntimeError for an unknown distribution or
// min_len > max_len or pad_to < 1 (the config layer reports those with their JSON path first).
[[nodiscard]] std::vector<std::int64_t> draw_document_lengths(const DocumentDraw& draw, std::int64_t seq_len);

}  // namespace spsim::models
