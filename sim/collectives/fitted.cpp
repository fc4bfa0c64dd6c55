// Measured per-collective α-β fits: parsing, the closed form, and the fitted run's bookkeeping.
#include "sim/collectives/fitted.hpp"

#include <cmath>

#include "runtime/core/error.hpp"
#include "sim/cluster/json_fields.hpp"
#include "sim/collectives/algorithm.hpp"
#include "sim/collectives/collectives.hpp"

namespace spsim::sim {

using detail::check_keys;
using detail::get_nonnegative;
using detail::join_path;

Time fitted_time(const CollectiveFit& fit, CommKind kind, double bytes) {
  return fit.latency + Time::from_seconds(bytes * rt::bus_bandwidth_factor(kind, fit.ranks) / fit.busbw_Bps);
}

const CollectiveFit* applicable_fit(const CollectiveFits& fits, CommKind kind,
                                    const std::string& algorithm, int group_size) {
  const auto& fit = fits[static_cast<std::size_t>(kind)];
  if (algorithm != "auto" || !fit || fit->ranks != group_size) return nullptr;
  return &*fit;
}

CollectiveFits parse_collective_fits(const nlohmann::json& j, const std::string& path) {
  detail::require_object(j, path);
  CollectiveFits fits;
  for (const auto& [name, entry] : j.items()) {
    const auto kind = rt::parse_collective_op(name);
    if (!kind)
      throw InputError(join_path(path, name), std::string("unknown collective '") + name +
                                                  "'; valid choices: " + rt::collective_op_choices());
    const std::string p = join_path(path, name);
    check_keys(entry, p, {"latency_us", "busbw_GBps", "ranks", "source", "residual"});
    CollectiveFit fit;
    fit.latency = Time::from_us(get_nonnegative(entry, p, "latency_us"));
    fit.busbw_Bps = get_nonnegative(entry, p, "busbw_GBps", true) * 1e9;
    fit.ranks = detail::get_positive_int(entry, p, "ranks");
    if (entry.contains("source")) fit.source = detail::get_string(entry, p, "source");
    if (entry.contains("residual")) fit.residual = get_nonnegative(entry, p, "residual");
    fits[static_cast<std::size_t>(*kind)] = std::move(fit);
  }
  return fits;
}

void CollectiveRun::finish_after(Time delay, double bytes_per_rank) {
  for (auto& b : result_.bytes_sent) b += bytes_per_rank;
  owner_.network_.engine().schedule_after(delay, [self = shared_from_this()] {
    for (auto& t : self->result_.rank_finish) t = self->owner_.network_.engine().now();
    self->finish();
  });
}

}  // namespace spsim::sim
