// Progressive filling with a lazy heap of per-link fair shares.
#include "sim/network/max_min.hpp"

#include <algorithm>
#include <limits>

namespace spsim::sim {

void MaxMinSolver::solve(std::span<const double> capacity, std::span<const int> offsets,
                         std::span<const int> links, std::vector<double>& rates) {
  const std::size_t n_links = capacity.size();
  const std::size_t n_flows = offsets.empty() ? 0 : offsets.size() - 1;
  rates.assign(n_flows, std::numeric_limits<double>::infinity());
  remaining_.assign(capacity.begin(), capacity.end());
  unfrozen_.assign(n_links, 0);
  version_.assign(n_links, 0);
  frozen_.assign(n_flows, 0);
  // Invert flow -> links into link -> flows (CSR).
  for (int l : links) ++unfrozen_[static_cast<std::size_t>(l)];
  link_offsets_.assign(n_links + 1, 0);
  for (std::size_t l = 0; l < n_links; ++l) link_offsets_[l + 1] = link_offsets_[l] + unfrozen_[l];
  link_flows_.resize(links.size());
  std::vector<int>& fill = version_;  // reused as a cursor, reset below
  for (std::size_t f = 0; f < n_flows; ++f)
    for (int i = offsets[f]; i < offsets[f + 1]; ++i) {
      const auto l = static_cast<std::size_t>(links[static_cast<std::size_t>(i)]);
      link_flows_[static_cast<std::size_t>(link_offsets_[l] + fill[l]++)] = static_cast<int>(f);
    }
  version_.assign(n_links, 0);

  // Min-heap on (share, link): deterministic tie-break by link index.
  auto later = [](const Entry& a, const Entry& b) {
    return a.share != b.share ? a.share > b.share : a.link > b.link;
  };
  heap_.clear();
  for (std::size_t l = 0; l < n_links; ++l)
    if (unfrozen_[l] > 0) heap_.push_back({remaining_[l] / unfrozen_[l], static_cast<int>(l), 0});
  std::make_heap(heap_.begin(), heap_.end(), later);

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Entry top = heap_.back();
    heap_.pop_back();
    const auto l = static_cast<std::size_t>(top.link);
    if (top.version != version_[l] || unfrozen_[l] == 0) continue;  // stale entry
    const double share = top.share;
    for (int k = link_offsets_[l]; k < link_offsets_[l + 1]; ++k) {
      const auto f = static_cast<std::size_t>(link_flows_[static_cast<std::size_t>(k)]);
      if (frozen_[f]) continue;
      frozen_[f] = 1;
      rates[f] = share;
      for (int i = offsets[f]; i < offsets[f + 1]; ++i) {
        const auto l2 = static_cast<std::size_t>(links[static_cast<std::size_t>(i)]);
        remaining_[l2] = std::max(0.0, remaining_[l2] - share);
        --unfrozen_[l2];
        ++version_[l2];
        if (l2 != l && unfrozen_[l2] > 0) {
          heap_.push_back({remaining_[l2] / unfrozen_[l2], static_cast<int>(l2), version_[l2]});
          std::push_heap(heap_.begin(), heap_.end(), later);
        }
      }
    }
  }
}

std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<int>>& flows) {
  std::vector<int> offsets{0}, links;
  for (const auto& f : flows) {
    links.insert(links.end(), f.begin(), f.end());
    offsets.push_back(static_cast<int>(links.size()));
  }
  std::vector<double> rates;
  MaxMinSolver().solve(capacity, offsets, links, rates);
  return rates;
}

}  // namespace spsim::sim
