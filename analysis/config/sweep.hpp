// Sweeps (DESIGN.md §7): the cartesian product of the config's `sweep` axes, one complete config per point.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

struct SweepPoint {
  std::vector<SweepValue> values;  // one per axis, in axis order (table columns)
  std::optional<Config> config;    // the point's complete config; nullopt when the point is invalid
  std::string error;               // why the point is invalid (InputError::what()), empty when valid
  [[nodiscard]] bool ok() const { return config.has_value(); }
};

// Largest number of points one sweep may expand to (each point holds a full Config).
inline constexpr std::size_t max_sweep_points = 100000;

// Points in row-major order of the axes as written (first axis slowest, last fastest). A config without
// a sweep gives one point (itself, no values). A point whose combination of values is impossible (a
// strategy constraint, heads % kv_heads, ...) is returned with `error` set instead of aborting the sweep;
// each value was validated for its path's type when the config was parsed.
[[nodiscard]] std::vector<SweepPoint> expand_sweep(
    const Config& config, const strategies::Registry& registry = strategies::builtin());

// Every dotted path a sweep may set, with the registry's strategy options as strategy.options.<name>.
[[nodiscard]] std::vector<std::string> sweep_paths(
    const strategies::Registry& registry = strategies::builtin());

}  // namespace spsim::analysis
