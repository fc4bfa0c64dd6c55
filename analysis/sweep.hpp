// Sweeps (DESIGN.md §7): the cartesian product of the config's `sweep` axes, one complete config per point.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/config.hpp"

namespace spsim::analysis {

struct SweepValue {
  std::string path;  // the axis, e.g. "workload.seq_len"
  Json value;        // this point's value on it
};

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

// A sweep value as a table cell shows it: strings without quotes, anything else as JSON.
[[nodiscard]] std::string sweep_value_text(const Json& value);

// Reads and validates the `sweep` section of a config's root object (empty when there is none):
// unknown path, a value list that is not a non-empty array, or a value of the wrong type is an InputError
// at "sweep.<path>" or "sweep.<path>[i]".
[[nodiscard]] std::vector<SweepAxis> parse_sweep_axes(const JsonObject& root,
                                                      const strategies::Registry& registry);

// `doc` without its sweep section and with each value set at its dotted path (objects created as needed).
[[nodiscard]] Json point_document(const Json& doc, const std::vector<SweepValue>& values);

}  // namespace spsim::analysis
