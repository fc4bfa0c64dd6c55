// Document and window bounds of an attention mask (see mask_bounds.hpp).
#include "runtime/core/mask_bounds.hpp"

#include <algorithm>
#include <limits>

#include "runtime/core/types.hpp"

namespace spsim::rt {

namespace {

using Run = Positions::Run;

// The part of run r inside [lo, hi) (a run again; count 0 when empty).
[[nodiscard]] Run clip(const Run& r, std::int64_t lo, std::int64_t hi) {
  if (r.count <= 0 || hi <= lo) return {r.first, r.stride, 0};
  const std::int64_t i0 = std::max<std::int64_t>(0, ceil_div(lo - r.first, r.stride));
  const std::int64_t i1 = std::min<std::int64_t>(r.count - 1, floor_div(hi - 1 - r.first, r.stride));
  if (i1 < i0) return {r.first, r.stride, 0};
  return {r.first + i0 * r.stride, r.stride, i1 - i0 + 1};
}

[[nodiscard]] Run shifted(const Run& r, std::int64_t by) {
  return {r.first + by, r.stride, r.count};
}

// Allowed pairs of one row run and one column run of the same document.
[[nodiscard]] std::int64_t pairs_within(const Run& r, const Run& c, bool causal, std::int64_t window) {
  if (r.count <= 0 || c.count <= 0) return 0;
  if (causal) {
    const std::int64_t seen = causal_pairs(r, c);                        // c <= r
    return window > 0 ? seen - causal_pairs(r, shifted(c, window)) : seen;  // minus c <= r − w
  }
  if (window == 0) return r.count * c.count;
  // |r − c| < w: c <= r + w − 1, minus c <= r − w.
  return causal_pairs(shifted(r, window - 1), c) - causal_pairs(r, shifted(c, window));
}

}  // namespace

MaskBounds::MaskBounds(std::span<const std::int64_t> document_lengths, std::int64_t window)
    : window_(window) {
  if (window < 0) throw RuntimeError("mask window must be >= 0, got " + std::to_string(window));
  if (document_lengths.empty()) return;
  auto starts = std::make_shared<std::vector<std::int64_t>>();
  starts->reserve(document_lengths.size() + 1);
  std::int64_t at = 0;
  for (const std::int64_t len : document_lengths) {
    if (len < 1) throw RuntimeError("document length must be >= 1, got " + std::to_string(len));
    starts->push_back(at);
    at += len;
  }
  starts->push_back(at);
  starts_ = std::move(starts);
}

std::int64_t MaskBounds::document_count() const {
  return starts_ ? static_cast<std::int64_t>(starts_->size()) - 1 : 1;
}

std::int64_t MaskBounds::documents_length() const {
  return starts_ ? starts_->back() : 0;
}

std::span<const std::int64_t> MaskBounds::document_starts() const {
  if (!starts_) return {};
  return {starts_->data(), starts_->size()};
}

std::vector<std::int64_t> MaskBounds::document_lengths() const {
  std::vector<std::int64_t> out;
  if (!starts_) return out;
  for (std::size_t i = 0; i + 1 < starts_->size(); ++i) out.push_back((*starts_)[i + 1] - (*starts_)[i]);
  return out;
}

std::int64_t MaskBounds::document_of(std::int64_t p) const {
  if (!starts_) return 0;
  // The last start <= p; positions past the end belong to the last document.
  const auto it = std::upper_bound(starts_->begin(), starts_->end() - 1, p);
  return std::max<std::int64_t>(0, (it - starts_->begin()) - 1);
}

std::pair<std::int64_t, std::int64_t> MaskBounds::key_range(std::int64_t q, bool causal, std::int64_t n) const {
  std::int64_t lo = 0, hi = causal ? q : n - 1;
  if (starts_) {
    const auto d = static_cast<std::size_t>(document_of(q));
    lo = std::max(lo, (*starts_)[d]);
    hi = std::min(hi, (*starts_)[d + 1] - 1);
  }
  if (window_ > 0) {
    lo = std::max(lo, q - window_ + 1);
    hi = std::min(hi, q + window_ - 1);
  }
  return {lo, hi};
}

std::string MaskBounds::describe(bool causal) const {
  std::string out;
  if (starts_)
    out = std::string(causal ? "document_causal" : "document") + " (" + std::to_string(document_count()) +
          (document_count() == 1 ? " document)" : " documents)");
  else if (window_ > 0)
    out = causal ? "sliding_window (causal)" : "sliding_window (both directions)";
  else
    out = causal ? "causal" : "full";
  if (window_ > 0) out += ", window " + std::to_string(window_);
  return out;
}

bool operator==(const MaskBounds& a, const MaskBounds& b) {
  if (a.window_ != b.window_ || (a.starts_ == nullptr) != (b.starts_ == nullptr)) return false;
  return a.starts_ == nullptr || a.starts_ == b.starts_ || *a.starts_ == *b.starts_;
}

std::int64_t allowed_pairs(const Positions& rows, const Positions& cols, bool causal, const MaskBounds* bounds) {
  if (bounds == nullptr || !bounds->active())
    return causal ? causal_pairs(rows, cols) : rows.size() * cols.size();
  if (rows.empty() || cols.empty()) return 0;
  const std::int64_t window = bounds->window();
  std::int64_t pairs = 0;
  if (!bounds->has_documents()) {
    for (const Run& r : rows.runs())
      for (const Run& c : cols.runs()) pairs += pairs_within(r, c, causal, window);
    return pairs;
  }
  // Each row run split by the documents it spans; the column runs clipped to the same document.
  const std::span<const std::int64_t> starts = bounds->document_starts();
  const auto last_doc = static_cast<std::int64_t>(starts.size()) - 2;
  constexpr std::int64_t kFar = std::numeric_limits<std::int64_t>::max() / 4;
  for (const Run& r : rows.runs()) {
    const std::int64_t lo_doc = bounds->document_of(r.first), hi_doc = bounds->document_of(r.last());
    for (std::int64_t d = lo_doc; d <= hi_doc; ++d) {
      // Positions outside [0, total) belong to the first / last document.
      const std::int64_t lo = d == 0 ? -kFar : starts[static_cast<std::size_t>(d)];
      const std::int64_t hi = d == last_doc ? kFar : starts[static_cast<std::size_t>(d) + 1];
      const Run rd = clip(r, lo, hi);
      if (rd.count == 0) continue;
      for (const Run& c : cols.runs()) pairs += pairs_within(rd, clip(c, lo, hi), causal, window);
    }
  }
  return pairs;
}

}  // namespace spsim::rt
