// Document lengths drawn from a named distribution (see documents.hpp).
#include "models/documents.hpp"

#include <algorithm>
#include <cmath>

#include "models/random.hpp"
#include "runtime/core/types.hpp"

namespace spsim::models {

const std::vector<std::string>& document_distributions() {
  static const std::vector<std::string> names = {"uniform", "exponential"};
  return names;
}

std::vector<std::int64_t> draw_document_lengths(const DocumentDraw& draw, std::int64_t seq_len) {
  if (draw.pad_to < 1) throw rt::RuntimeError("pad_to must be >= 1, got " + std::to_string(draw.pad_to));
  if (draw.min_len < 1 || draw.max_len < draw.min_len)
    throw rt::RuntimeError("document lengths need 1 <= min_len <= max_len, got " + std::to_string(draw.min_len) +
                           " and " + std::to_string(draw.max_len));
  const bool uniform = draw.distribution == "uniform";
  if (!uniform && draw.distribution != "exponential")
    throw rt::RuntimeError("unknown document length distribution '" + draw.distribution + "'");
  const std::int64_t pad = std::min(draw.pad_to, seq_len);  // no rounding past the sequence (no overflow)
  SplitMix64 rng(draw.seed);
  std::vector<std::int64_t> lengths;
  std::int64_t total = 0;
  while (total < seq_len) {
    std::int64_t len = 0;
    if (uniform) {
      const auto span = static_cast<std::uint64_t>(draw.max_len - draw.min_len + 1);
      len = draw.min_len + static_cast<std::int64_t>(rng.next_u64() % span);
    } else {
      const double x = std::ceil(-static_cast<double>(draw.mean_len) * std::log1p(-rng.next_uniform()));
      len = std::clamp(static_cast<std::int64_t>(std::min(x, 9.0e18)), draw.min_len, draw.max_len);
    }
    len = std::min(len, seq_len);
    len = std::min((len + pad - 1) / pad * pad, seq_len - total);
    lengths.push_back(len);
    total += len;
  }
  return lengths;
}

}  // namespace spsim::models
