// Measured per-collective α-β fits: parsing, the closed form, and the fitted run's bookkeeping.
#include "sim/collectives/fitted.hpp"

#include <cmath>

#include "runtime/core/error.hpp"
#include "sim/collectives/algorithm.hpp"
#include "sim/collectives/collectives.hpp"

namespace spsim::sim {

Time fitted_time(const CollectiveFit& fit, CommKind kind, double bytes) {
  return fit.latency + Time::from_seconds(bytes * rt::bus_bandwidth_factor(kind, fit.ranks) / fit.busbw_Bps);
}

const CollectiveFit* applicable_fit(const CollectiveFits& fits, CommKind kind, const std::string& algorithm,
                                    int group_size) {
  const auto& fit = fits[static_cast<std::size_t>(kind)];
  if (algorithm != "auto" || !fit || fit->ranks != group_size) return nullptr;
  return &*fit;
}

void CollectiveRun::finish_after(Time delay, double bytes_per_rank) {
  for (auto& b : result_.bytes_sent) b += bytes_per_rank;
  owner_.network_.engine().schedule_after(delay, [self = shared_from_this()] {
    for (auto& t : self->result_.rank_finish) t = self->owner_.network_.engine().now();
    self->finish();
  });
}

}  // namespace spsim::sim
