// Experiment config (DESIGN.md §7): parsed and validated once into typed structs.
//
// Errors: every problem is a spsim::InputError whose where() is the JSON path ("workload.seq_len",
// "strategy.options.grad_reduction", "sweep.workload.seq_len[2]"; the file path for file-level
// problems) and whose message names the bad value and the valid choices or the expected type.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/json_reader.hpp"
#include "models/spec.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

struct StrategyConfig {
  std::string name;
  int degree = 1;               // sequence-parallel group size
  strategies::Options options;  // complete (defaults filled in) and validated against the registry
};

struct ParallelConfig {
  int dp = 1;  // data-parallel replicas of the SP group (world = strategy.degree × dp)
  // DDP gradient bucket size in MiB (PyTorch's bucket_cap_mb; 25 by default): layer and model scopes
  // all-reduce weight gradients in buckets of at least this size as backward finishes them.
  double bucket_mb = 25;
  // bucket_mb in bytes, at least one byte (a tiny positive value still means "a bucket per gradient").
  [[nodiscard]] std::uint64_t bucket_bytes() const {
    const double bytes = bucket_mb * 1024 * 1024;
    return bytes < 1 ? 1 : static_cast<std::uint64_t>(bytes);
  }
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
  std::string trace_out;         // Chrome trace path as written in the config, empty = none
  // Fraction by which compute kernels slow down while a communication kernel runs on the same GPU
  // (sim/replay/replay.hpp); >= 0, default 0.1.
  double compute_slowdown = 0.1;
};

struct CheckConfig {
  rt::DType dtype = rt::DType::f64;  // float64 | float32
  std::uint64_t seed = 1;
};

struct SweepAxis {
  std::string path;          // dotted JSON path, e.g. "workload.seq_len"
  std::vector<Json> values;  // validated for the path's type; never empty
};

// A config without `sweep` is complete: every field validated, every cross-field constraint checked
// (heads % kv_heads, head_dim derivable, the strategy's own check). A config WITH a sweep is a template:
// its fields are those of the sweep's first point, cross-field constraints are not checked, and
// expand_sweep (analysis/sweep.hpp) yields the complete per-point configs.
struct Config {
  std::string name;
  std::filesystem::path source;  // file it came from (relative paths resolve against its folder)
  models::ModelSpec model;
  models::Workload workload;
  nlohmann::json cluster =
      nlohmann::json::object();  // an object; the simulator's cluster parser validates it
  StrategyConfig strategy;
  ParallelConfig parallel;
  CollectivesConfig collectives;
  SimulationConfig simulation;
  CheckConfig check;
  std::vector<SweepAxis> sweep;  // in the order written (first axis varies slowest)
  Json raw;                      // the document as given (sweeps re-parse modified copies)
};

// Reads and parses a config file. Missing file or malformed JSON (with line and column) is an InputError
// at the file path.
[[nodiscard]] Config load_config(const std::filesystem::path& path,
                                 const strategies::Registry& registry = strategies::builtin());
// Parses a document; `source` is the file it came from (empty: relative paths resolve against the
// current directory). Strategy names and options are checked against `registry`.
[[nodiscard]] Config parse_config(const Json& doc, const std::filesystem::path& source,
                                  const strategies::Registry& registry = strategies::builtin());

}  // namespace spsim::analysis
