// The committed published measurements `spsim validate` checks the models against (configs/validation/):
// one JSON file per group, parsed here into typed rows (the reader speaks nlohmann::json).
//
// A file: {"group", "description", "kind": attention_kernel | gemm | distributed | collective,
// "tolerance_mape",
// optional "tolerance_max" (every validation row within it), "tolerance_applies_to", optional
// "min_seq_len" (attention rows below it are reported, not held to the tolerance), "source",
// "defaults" (fields merged under every row), "rows": [...], optional "ratios": [{"name", "num",
// "den", "tolerance"}] (distributed: measured num/den against predicted, both row ids)}.
// A row: "id", "use" (calibration: used to fit; validation: never), "measured", "unit", optional
// "note" and "source", and by kind:
//   attention_kernel  gpu, kernel, pass (fwd | bwd | fwd+bwd), causal, batch, heads, kv_heads,
//                     seq_len, head_dim, optional head_dim_v, dtype; unit TFLOP/s (the FlashAttention
//                     papers' FLOP convention) or it/s
//   gemm              gpu, m, n, k, dtype; unit TFLOP/s
//   distributed       config: a whole simulate config (inline); optional phase (step, forward,
//                     backward; default step); unit it/s (1 / the phase's time) or ms
//   collective        cluster (a cluster section, e.g. {"preset": "dgx-h100", "nodes": 2,
//                     "gpus_per_node": 4}), op, bytes (nccl-tests' size), optional algo (default auto:
//                     the tuner), protocol (auto), network (flow); unit GB/s (nccl-tests' busbw)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "sim/cluster/config.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis {

enum class ValidationKind { attention_kernel, gemm, distributed, collective };

struct ValidationRow {
  std::string id;
  bool calibration = false;  // "use": "calibration" (fitted on) or "validation"
  double measured = 0;
  std::string unit;  // TFLOP/s | it/s | GB/s | ms
  std::string note, source;
  // attention_kernel and gemm
  std::string gpu, kernel, pass;  // pass: fwd | bwd | fwd+bwd
  bool causal = false;
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq_len = 0, head_dim = 0, head_dim_v = 0;
  std::int64_t m = 0, n = 0, k = 0;
  rt::DType dtype = rt::DType::bf16;
  // distributed
  std::optional<Config> config;
  std::string phase = "step";  // step | forward | backward
  // collective
  std::optional<sim::ClusterConfig> cluster;
  rt::CommKind op = rt::CommKind::all_reduce;
  double bytes = 0;
  std::string algo = "auto";
  std::optional<sim::Protocol> protocol;  // nullopt: the tuner's
  sim::NetworkMode network = sim::NetworkMode::flow;
};

struct ValidationRatio {
  std::string name, num, den;  // row ids
  double tolerance = 0;
};

struct ValidationGroup {
  std::string name, description, source, applies_to;
  std::filesystem::path file;
  ValidationKind kind = ValidationKind::attention_kernel;
  double tolerance_mape = 0;
  std::optional<double> tolerance_max;
  std::int64_t min_seq_len = 0;
  std::vector<ValidationRow> rows;
  std::vector<ValidationRatio> ratios;
};

// Every *.json of `dir` (default config_dir()/validation), sorted by file name. InputError naming the
// file and JSON path on a bad field.
[[nodiscard]] std::vector<ValidationGroup> load_validation(const std::filesystem::path& dir = {});

}  // namespace spsim::analysis
