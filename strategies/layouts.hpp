// Sequence layouts shared by the ring-family strategies (ring, USP's ring level, all-gather-KV): which
// global token positions each rank holds. Every rank holds s/P tokens, in ascending order, as a few
// arithmetic runs (layout_runs builds them without visiting tokens, so a strategy holds every owner's
// positions for the cost of its runs):
//   contiguous       rank r holds [r·s/P, (r+1)·s/P)
//   zigzag           2P chunks of s/2P; rank r holds chunk r then chunk 2P−1−r. Under a causal mask chunk
//                    i attends to i full chunks and one diagonal, so the pair r, 2P−1−r always sums to 2P−1
//                    full chunks + 2 diagonals: every rank gets the same work (Brandon et al. 2023,
//                    "Striped Attention", and the Llama 3 paper, §3.3.2, use this balancing).
//   striped          token t on rank t mod P (Brandon et al. 2023).
//   document_zigzag  zigzag inside every document of workload.mask (chunks r and 2P−1−r of each
//                    document, so each document's causal work is shared evenly); every document's length
//                    must divide by 2P, as packed-sequence context parallelism requires (Megatron-Core's
//                    THD format pads each sequence to a multiple of 2·cp). Without documents: zigzag.
//   balanced         the sequence cut into k·P equal chunks (k the largest of 16, 8, 4, 2, 1 with k·P | s),
//                    dealt so that every rank's unmasked attention area (its queries against all keys, under
//                    the workload's mask) is as equal as the chunks allow: chunks in decreasing area, each to
//                    the rank with the least area among those holding fewer than k (greedy longest-
//                    processing-time with a cardinality bound), then single swaps between the busiest
//                    rank and another while they lower the busiest rank's area (at most 256). Deterministic (ties go to
//                    the lower chunk and rank index); a rank's chunks in ascending order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "runtime/core/positions.hpp"

namespace spsim::strategies {

enum class Layout { contiguous, zigzag, striped, document_zigzag, balanced };

[[nodiscard]] const std::vector<std::string>& layout_names();
[[nodiscard]] Layout parse_layout(const std::string& name);  // one of layout_names(), else contiguous
// The positions rank `rank` of `degree` holds for problem `p` (its seq_len, and for document_zigzag
// and balanced its mask).
[[nodiscard]] rt::Positions layout_runs(Layout layout, int rank, int degree, const models::AttnProblem& p);
// Why p cannot be split over `degree` ranks in `layout`, or nullopt.
[[nodiscard]] std::optional<std::string> layout_check(Layout layout, int degree, const models::AttnProblem& p);
// The chunks per rank of the balanced layout (k above); 0 when s/P does not divide.
[[nodiscard]] int balanced_chunks_per_rank(int degree, std::int64_t seq_len);

}  // namespace spsim::strategies
