// Max-min fair rates of flows over shared links, by progressive filling.
//
// Bertsekas & Gallager, "Data Networks" (2nd ed., 1992), §6.5.2: start all rates at 0 and raise
// them together; when a link saturates, the flows crossing it are frozen at its fair share. In
// closed steps: with R_l the capacity of link l not yet given to frozen flows and n_l the number of
// unfrozen flows crossing it, the bottleneck is l* = argmin_l R_l / n_l; every unfrozen flow on l*
// gets r = R_{l*} / n_{l*}; subtract r from R of every link those flows cross, decrement n; repeat.
// The result is the unique allocation in which no flow can grow without shrinking a flow whose rate
// is no larger. Each step costs O(log L) per affected link (lazy heap of shares).
#pragma once

#include <span>
#include <vector>

namespace spsim::sim {

class MaxMinSolver {
 public:
  // `capacity[l]`: bytes/s of link l. Flow f crosses links `links[offsets[f] .. offsets[f+1])`
  // (indices into capacity). Writes rates[f] (bytes/s); a flow crossing no link gets +infinity.
  // Scratch storage is reused across calls, so a long-lived solver allocates rarely.
  void solve(std::span<const double> capacity, std::span<const int> offsets, std::span<const int> links,
             std::vector<double>& rates);

 private:
  std::vector<double> remaining_;
  std::vector<int> unfrozen_;
  std::vector<int> version_;
  std::vector<int> link_offsets_;
  std::vector<int> link_flows_;
  std::vector<char> frozen_;
  struct Entry {
    double share;
    int link;
    int version;
  };
  std::vector<Entry> heap_;
};

// Convenience form: flows given as lists of link indices.
[[nodiscard]] std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                                const std::vector<std::vector<int>>& flows);

}  // namespace spsim::sim
