// The config schema's fixed vocabulary (DESIGN.md §7): section keys and the valid choices of each
// enumerated field, in one place so the parser, the sweep validator and the error messages agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spsim::analysis::schema {

inline constexpr std::int64_t version = 1;

inline const std::vector<std::string> top_keys = {"schema_version", "name",     "model",    "workload",
                                                  "cluster",        "strategy", "parallel", "collectives",
                                                  "simulation",     "check",    "sweep"};

// Integer model dimensions and their smallest valid value (vocab 0 = no embedding / LM head).
struct ModelDim {
  const char* key;
  std::int64_t min;
};
inline const std::vector<ModelDim> model_dims = {{"hidden", 1},   {"heads", 1},      {"kv_heads", 1},
                                                 {"head_dim", 1}, {"ffn_hidden", 1}, {"layers", 1},
                                                 {"vocab", 0}};
inline const std::vector<std::string> model_keys = {"preset",   "hf_config",  "hidden", "heads", "kv_heads",
                                                    "head_dim", "ffn_hidden", "layers", "vocab"};

inline const std::vector<std::string> workload_keys = {"seq_len", "batch",  "dtype",    "causal",
                                                       "scope",   "passes", "recompute"};
inline const std::vector<std::string> workload_dtypes = {"bf16", "fp16", "float32", "float64"};
inline const std::vector<std::string> scopes = {"attention", "layer", "model"};
inline const std::vector<std::string> passes = {"fwd", "fwd+bwd"};

inline const std::vector<std::string> strategy_keys = {"name", "degree", "options"};
inline const std::vector<std::string> parallel_keys = {"dp", "bucket_mb"};

// Collective algorithm names: tree = NCCL's double binary tree, rhd = recursive halving-doubling,
// direct = pairwise exchange, nvls = in-switch reduction (NVLink SHARP). The simulator's collective
// registry is the authority on which exist; keep this list in step with it.
struct CollectiveKey {
  const char* key;
  std::vector<std::string> choices;
};
inline const std::vector<CollectiveKey> collectives = {
    {"all_reduce", {"auto", "ring", "tree", "rhd", "direct", "hierarchical", "nvls"}},
    {"reduce_scatter", {"auto", "ring", "rhd", "direct", "hierarchical", "nvls"}},
    {"all_gather", {"auto", "ring", "rhd", "direct", "hierarchical", "nvls"}},
    {"all_to_all", {"auto", "pairwise", "hierarchical"}},
    {"protocol", {"auto", "simple", "ll", "ll128"}},
};

inline const std::vector<std::string> simulation_keys = {"network", "trace_out", "compute_slowdown"};
inline const std::vector<std::string> networks = {"flow", "analytical"};

inline const std::vector<std::string> check_keys = {"dtype", "seed"};
inline const std::vector<std::string> check_dtypes = {"float64", "float32"};

}  // namespace spsim::analysis::schema
