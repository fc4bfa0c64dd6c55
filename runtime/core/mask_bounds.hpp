// The bounds of an attention mask besides its causal direction: a query sees keys of its own document
// only (packed sequences, "document causal"), and with a sliding window only keys fewer than `window`
// positions away. Both are defined on global token positions, like the causal mask, so every layout
// applies them the same way, and together with causality every query sees one interval of keys:
//
//   key k is visible to query q  iff  (not causal or k <= q)  and  doc(k) = doc(q)  and
//                                     (window = 0 or |q − k| < window)
//
// Allowed pairs of two blocks are counted on the positions' runs (allowed_pairs): a run restricted to
// a document is again a run, and a window is the difference of two shifted causal counts, so a block
// costs O(row runs × documents it spans × column runs), never a visit of its tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/positions.hpp"

namespace spsim::rt {

class MaskBounds {
 public:
  MaskBounds() = default;  // no bounds: one document, no window
  // Documents of the given lengths (each ≥ 1) laid end to end from position 0; an empty list means one
  // document. window ≥ 0 (0: no window). Throws RuntimeError on a bad length or window (the config
  // layer reports those with their JSON path first).
  MaskBounds(std::span<const std::int64_t> document_lengths, std::int64_t window);

  [[nodiscard]] bool active() const { return window_ > 0 || starts_ != nullptr; }
  [[nodiscard]] std::int64_t window() const { return window_; }
  [[nodiscard]] bool has_documents() const { return starts_ != nullptr; }
  [[nodiscard]] std::int64_t document_count() const;
  // Sum of the document lengths (0 without documents).
  [[nodiscard]] std::int64_t documents_length() const;
  // The first position of each document, then one past the last document's end.
  [[nodiscard]] std::span<const std::int64_t> document_starts() const;
  [[nodiscard]] std::vector<std::int64_t> document_lengths() const;
  // Index of the document holding position p (0 without documents).
  [[nodiscard]] std::int64_t document_of(std::int64_t p) const;

  // The bounds alone (without the causal direction).
  [[nodiscard]] bool allows(std::int64_t q, std::int64_t k) const {
    if (window_ > 0 && (q - k >= window_ || k - q >= window_)) return false;
    return starts_ == nullptr || document_of(q) == document_of(k);
  }
  // The keys [lo, hi] among positions [0, n) that query q (< n) may see, with the causal direction.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> key_range(std::int64_t q, bool causal,
                                                                std::int64_t n) const;
  // "causal", "full", "document_causal (3 documents), window 1024", …
  [[nodiscard]] std::string describe(bool causal) const;

  friend bool operator==(const MaskBounds& a, const MaskBounds& b);

 private:
  std::int64_t window_ = 0;
  std::shared_ptr<const std::vector<std::int64_t>> starts_;  // shared: problems are copied per rank
};

// The number of pairs (r, c), r in `rows`, c in `cols`, that the mask allows (c <= r under causal, and
// within `bounds` when given).
[[nodiscard]] std::int64_t allowed_pairs(const Positions& rows, const Positions& cols, bool causal,
                                         const MaskBounds* bounds);

}  // namespace spsim::rt
