// Experiment config (DESIGN.md §7): parsed and validated once into typed structs. Nothing downstream
// reads JSON: the cluster is the simulator's ClusterConfig (preset and hardware files already read),
// collective algorithms are resolved against the simulator's registry (aliases included), the network
// mode, protocol and dtypes are enums, and the strategy carries its registry entry.
//
// Errors: every problem is a spsim::InputError whose where() is the JSON path ("workload.seq_len",
// "strategy.options.grad_reduction", "sweep.workload.seq_len[2]"; the file path for file-level
// problems) and whose message names the bad value and the valid choices or the expected type.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "runtime/core/comm_kind.hpp"
#include "sim/cluster/config.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/network/network.hpp"
#include "strategies/layer_strategy.hpp"
#include "strategies/strategy.hpp"

namespace spsim::analysis {

struct StrategyConfig {
  std::string name;
  int degree = 1;               // sequence-parallel (context-parallel) group size
  std::string degree_key = "strategy.degree";  // the config key that gave it (or "parallel.cp")
  strategies::Options options;  // complete (defaults filled in) and validated against the registry
  const strategies::StrategyInfo* entry = nullptr;  // the registry entry of `name` (set by the parser)
  // The registry entry: `entry`, or for a config built by hand (tests) the built-in strategy `name`
  // (InputError at strategy.name when there is none).
  [[nodiscard]] const strategies::StrategyInfo& info() const;
};

// The layer strategy of the layer and model scopes (strategies/layer_strategy.hpp): `layer.name`, or by
// default megatron_sp when parallel.tp > 1 and replicated otherwise.
struct LayerConfig {
  std::string name = "replicated";
  strategies::Options options;                     // complete and validated
  const strategies::LayerInfo* entry = nullptr;    // the registry entry of `name` (set by the parser)
  [[nodiscard]] const strategies::LayerInfo& info() const;
};

struct ParallelConfig {
  int tp = 1;  // tensor-parallel group size (layer strategy megatron_sp); the CP degree is strategy.degree
  int dp = 1;  // data-parallel replicas of the TP × CP group (world = tp × strategy.degree × dp)
  // Megatron's distributed optimizer (ZeRO-1): each rank keeps the optimizer state (fp32 master weights
  // and Adam moments, 12 of the 16 bytes per parameter) of 1/(cp × dp) of its parameters.
  bool distributed_optimizer = false;
  // DDP gradient bucket size in MiB (PyTorch's bucket_cap_mb; 25 by default): layer and model scopes
  // all-reduce weight gradients in buckets of at least this size as backward finishes them.
  double bucket_mb = 25;
  // bucket_mb in bytes, at least one byte (a tiny positive value still means "a bucket per gradient").
  [[nodiscard]] std::uint64_t bucket_bytes() const {
    const double bytes = bucket_mb * 1024 * 1024;
    return bytes < 1 ? 1 : static_cast<std::uint64_t>(bytes);
  }
};

struct CollectivesConfig {
  // Per kind whose algorithm a config chooses (rt::tuned_kinds(), indexed by its enum value): a name
  // of the simulator's collectives registry (an alias such as "rhd" resolved to "halving_doubling")
  // or "auto", the simulator's tuner.
  std::array<std::string, rt::kTunedKinds> algorithm{"auto", "auto", "auto", "auto"};
  std::optional<sim::Protocol> protocol;  // nullopt: "auto" (the tuner's pick; Simple for p2p)
  [[nodiscard]] const std::string& of(rt::CommKind kind) const {
    return algorithm.at(static_cast<std::size_t>(kind));
  }
  [[nodiscard]] std::string& of(rt::CommKind kind) { return algorithm.at(static_cast<std::size_t>(kind)); }
};

struct SimulationConfig {
  sim::NetworkMode network = sim::NetworkMode::flow;
  std::string trace_out;  // Chrome trace path as written in the config, empty = none
  // Fraction by which compute kernels slow down while a communication kernel runs on the same GPU
  // (sim/replay/replay.hpp); >= 0. Unless the config gives it: C / (SMs − C) where the cluster's
  // tuning names the C channels NCCL builds per GPU (each holds an SM for the communication kernel's
  // run, so compute keeps SMs − C of the SMs), else the uncalibrated 0.1.
  double compute_slowdown = 0.1;
  // How compute_slowdown was set: "simulation.compute_slowdown", "NCCL's 24 channels hold 24 of 108
  // SMs" or "default, uncalibrated" (simulate's header says it).
  std::string compute_slowdown_basis = "default, uncalibrated";
  static constexpr const char* kGivenBasis = "simulation.compute_slowdown";
  [[nodiscard]] bool compute_slowdown_given() const { return compute_slowdown_basis == kGivenBasis; }
  // Fused-attention kernel family (fa2, fa3, fa4, cudnn; sim/compute/attention_kernel.hpp); empty = the
  // GPU's default_attention_kernel.
  std::string attention_kernel;
};

struct CheckConfig {
  rt::DType dtype = rt::DType::f64;  // float64 | float32
  bool dtype_given = false;          // the config names check.dtype (`run` computes in float32 otherwise)
  std::uint64_t seed = 1;
};

// One value of a sweep axis: its JSON text as the config gave it, how a table cell shows it, and its
// number when it is one.
struct SweepValue {
  std::string path;  // the axis, e.g. "workload.seq_len"
  std::string json;  // e.g. 65536, "zigzag", {"name": "ring", "options": {"layout": "zigzag"}}
  std::string text;  // strings without quotes, a strategy as "ring(layout=zigzag)", else the JSON
  std::optional<double> number;
};

struct SweepAxis {
  std::string path;                // dotted JSON path, e.g. "workload.seq_len"
  std::vector<SweepValue> values;  // validated for the path's type; never empty
};

struct ConfigDocument;  // the JSON a config was parsed from (analysis/config/document.hpp)

// A config without `sweep` is complete: every field validated, every cross-field constraint checked
// (heads % kv_heads, head_dim derivable, the strategy's own check). A config WITH a sweep is a template:
// its fields are those of the sweep's first point, cross-field constraints are not checked, and
// expand_sweep (analysis/config/sweep.hpp) yields the complete per-point configs.
struct Config {
  std::string name;
  std::filesystem::path source;  // file it came from (relative paths resolve against its folder)
  models::ModelSpec model;
  models::Workload workload;
  std::optional<sim::ClusterConfig> cluster;  // nullopt: the config has no cluster section
  StrategyConfig strategy;
  LayerConfig layer;
  ParallelConfig parallel;
  CollectivesConfig collectives;
  SimulationConfig simulation;
  CheckConfig check;
  std::vector<SweepAxis> sweep;                    // in the order written (first axis varies slowest)
  std::shared_ptr<const ConfigDocument> document;  // sweeps and reports re-parse modified copies

  // The ranks the step runs on: parallel.tp × strategy.degree (the CP degree) × parallel.dp.
  [[nodiscard]] std::int64_t world() const {
    return static_cast<std::int64_t>(parallel.tp) * strategy.degree * parallel.dp;
  }
  // The key to name when the world is too large: the last factor above 1 of dp, tp, the CP degree.
  [[nodiscard]] std::string world_key() const {
    return parallel.dp > 1 ? "parallel.dp" : parallel.tp > 1 ? "parallel.tp" : strategy.degree_key;
  }
};

// Whether output names the layer strategy: tensor parallelism or a layer strategy other than the
// replicated default (shared by check, simulate and run output).
[[nodiscard]] inline bool layer_shown(const std::string& layer, int tp) {
  return tp > 1 || (!layer.empty() && layer != "replicated");
}

// The layout's constraints on the model (heads, kv_heads, ffn_hidden and seq_len against tp and the CP
// degree; the attention strategy's own check on the heads one TP rank holds): InputError naming the key.
void check_parallel_layout(const Config& config);

// simulation.compute_slowdown from the cluster, unless the config gives it (then unchanged): C / (SMs − C)
// where cluster.tuning.channels names NCCL's C channels per GPU, else the uncalibrated default. Parsing
// calls it; call it again after replacing config.cluster.
void resolve_compute_slowdown(Config& config);

// What the command line replaces in a config before it is parsed.
struct ConfigOverrides {
  // `--cluster FILE|PRESET`: the cluster section becomes this cluster JSON file (e.g. written by
  // `spsim calibrate`) or {"preset": PRESET}; InputError at "--cluster" for a missing file or an
  // invalid cluster. Sweeps over cluster.* then apply to it.
  std::string cluster;
};

// Reads and parses a config file. Missing file or malformed JSON (with line and column) is an InputError
// at the file path.
[[nodiscard]] Config load_config(const std::filesystem::path& path, const ConfigOverrides& overrides = {},
                                 const strategies::Registry& registry = strategies::builtin());
// Parses config JSON text (as load_config does a file's contents); `source` as for a file.
[[nodiscard]] Config parse_config_text(const std::string& json_text, const std::filesystem::path& source,
                                       const strategies::Registry& registry = strategies::builtin());

// The config with the values set at their dotted paths (as a sweep point is made), re-parsed.
[[nodiscard]] Config config_with(const Config& config, const std::vector<SweepValue>& values,
                                 const strategies::Registry& registry = strategies::builtin());

// The `--cluster FILE|PRESET` argument as a cluster (InputError at `where`).
[[nodiscard]] sim::ClusterConfig load_cluster_argument(const std::string& argument,
                                                       const std::string& where = "--cluster");

}  // namespace spsim::analysis
