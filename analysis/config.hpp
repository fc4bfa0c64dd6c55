// Experiment config (DESIGN.md §7): parsed and validated once into typed structs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

struct StrategyConfig {
  std::string name;
  int degree = 1;
  strategies::Options options;  // complete (defaults filled in) and validated against the registry
};

struct CollectivesConfig {  // algorithm names per collective kind, "auto" = the simulator's tuner
  std::string all_reduce = "auto";
  std::string reduce_scatter = "auto";
  std::string all_gather = "auto";
  std::string all_to_all = "auto";
  std::string protocol = "auto";
};

struct SimulationConfig {
  std::string network = "flow";  // flow | analytical
  std::string trace_out;         // Chrome trace path, empty = none
};

struct CheckConfig {
  rt::DType dtype = rt::DType::f64;  // float64 | float32
  std::uint64_t seed = 1;
};

struct SweepAxis {
  std::string path;                  // dotted JSON path, e.g. "workload.seq_len"
  std::vector<nlohmann::json> values;
};

struct Config {
  std::string name;
  std::filesystem::path source;  // file it came from (relative paths resolve against its folder)
  models::ModelSpec model;
  models::Workload workload;
  nlohmann::json cluster;        // validated by the simulator's cluster parser
  StrategyConfig strategy;
  CollectivesConfig collectives;
  SimulationConfig simulation;
  CheckConfig check;
  std::vector<SweepAxis> sweep;
  nlohmann::json raw;            // the document as given (sweeps re-parse modified copies)
};

// Throws InputError naming the JSON path, the bad value and the valid choices.
[[nodiscard]] Config load_config(const std::filesystem::path& path);
[[nodiscard]] Config parse_config(const nlohmann::json& doc, const std::filesystem::path& source);

}  // namespace spsim::analysis
