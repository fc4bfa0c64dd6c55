// Sequence layouts shared by the ring-family strategies: which global token positions each rank holds.
//
// All three give every rank an ascending list of one or two arithmetic runs (layout_runs builds them in
// closed form, O(1) per rank, so a strategy holds every owner's positions for the cost of its runs):
//   contiguous  rank r holds [r·s/P, (r+1)·s/P)
//   zigzag      2P chunks of s/2P; rank r holds chunk r then chunk 2P−1−r. Under a causal mask chunk i
//               attends to i full chunks and one diagonal, so the pair r, 2P−1−r always sums to 2P−1
//               full chunks + 2 diagonals: every rank gets the same work (Brandon et al. 2023,
//               "Striped Attention", and the Llama 3 paper, §3.3.2, use this balancing).
//   striped     token t on rank t mod P (Brandon et al. 2023).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/positions.hpp"

namespace spsim::strategies {

enum class Layout { contiguous, zigzag, striped };

[[nodiscard]] Layout parse_layout(const std::string& name);  // one of the three names, else contiguous
[[nodiscard]] std::vector<std::int64_t> layout_positions(Layout layout, int rank, int degree,
                                                         std::int64_t seq_len);
// The same positions as runs: contiguous one run, zigzag two, striped one of stride `degree`.
[[nodiscard]] rt::Positions layout_runs(Layout layout, int rank, int degree, std::int64_t seq_len);
// Why seq_len cannot be split over `degree` ranks in `layout`, or nullopt.
[[nodiscard]] std::optional<std::string> layout_check(Layout layout, int degree, std::int64_t seq_len);

}  // namespace spsim::strategies
