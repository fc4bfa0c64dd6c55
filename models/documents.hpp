// Document lengths of a packed sequence drawn from a named distribution (workload.mask.documents as
// {distribution, …}), deterministic for a seed on every platform (SplitMix64, no <random>).
//
//   uniform      lengths uniform on [min_len, max_len]
//   exponential  lengths ⌈−mean_len · ln(1 − u)⌉, u uniform on [0, 1), clamped to [min_len, max_len]
//                (many short documents and a long tail, as in web-text corpora)
//
// Lengths are drawn until they cover the sequence; the last document is cut to end at seq_len.
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
  std::uint64_t seed = 0;
};

[[nodiscard]] const std::vector<std::string>& document_distributions();

// Lengths (each ≥ 1) summing to seq_len ≥ 1. Throws RuntimeError for an unknown distribution or
// min_len > max_len (the config layer reports those with their JSON path first).
[[nodiscard]] std::vector<std::int64_t> draw_document_lengths(const DocumentDraw& draw, std::int64_t seq_len);

}  // namespace spsim::models
