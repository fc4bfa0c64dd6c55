// The config parser's JSON side: what parse_config reads and what a sweep re-parses. Only the config
// parser, its tests and the JSON writers include this (it brings nlohmann::json); everything downstream
// uses the typed Config of config.hpp.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/config/config.hpp"
#include "analysis/config/json_reader.hpp"

namespace spsim::analysis {

// The document a Config was parsed from, as given (sweeps and reports re-parse modified copies).
struct ConfigDocument {
  Json json;
};

// Parses a document; `source` is the file it came from (empty: relative paths resolve against the
// current directory). Strategy names and options are checked against `registry`.
[[nodiscard]] Config parse_config(const Json& doc, const std::filesystem::path& source,
                                  const strategies::Registry& registry = strategies::builtin());

// The document `config` was parsed from.
[[nodiscard]] const Json& config_document(const Config& config);

// A sweep value (validated for its path) as the config keeps it: JSON text, table text, number.
[[nodiscard]] SweepValue sweep_value(const std::string& path, const Json& value);
// A sweep value as a table cell shows it: strings without quotes, a strategy object as
// "ring(layout=zigzag)", anything else as JSON.
[[nodiscard]] std::string sweep_value_text(const Json& value);

// Reads and validates the `sweep` section of a config's root object (empty when there is none):
// unknown path, a value list that is not a non-empty array, or a value of the wrong type is an InputError
// at "sweep.<path>" or "sweep.<path>[i]".
[[nodiscard]] std::vector<SweepAxis> parse_sweep_axes(const JsonObject& root,
                                                      const strategies::Registry& registry);

// `doc` without its sweep section and with each value set at its dotted path (objects created as needed).
[[nodiscard]] Json point_document(const Json& doc, const std::vector<SweepValue>& values);

// Parses the `cluster` section (an object) into the simulator's type; errors name `path_prefix` +
// the JSON path (cluster.hpp lists the keys).
[[nodiscard]] sim::ClusterConfig parse_cluster(const nlohmann::json& cluster_section,
                                               const std::string& path_prefix);

}  // namespace spsim::analysis
