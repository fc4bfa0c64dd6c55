// The config schema's vocabulary (DESIGN.md §7): section keys and the valid choices of each enumerated
// field, in one place so the parser, the sweep validator and the error messages agree. Choices that
// belong to another layer (collective algorithms, protocols, network models) are derived from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/comm_kind.hpp"

namespace spsim::analysis::schema {

inline constexpr std::int64_t version = 1;

inline const std::vector<std::string> top_keys = {"schema_version", "name",     "model",    "workload",
                                                  "cluster",        "strategy", "layer",    "parallel",
                                                  "collectives",    "simulation", "check",  "sweep"};

// Integer model dimensions and their smallest valid value (vocab 0 = no embedding / LM head).
struct ModelDim {
  const char* key;
  std::int64_t min;
};
inline const std::vector<ModelDim> model_dims = {{"hidden", 1},   {"heads", 1},      {"kv_heads", 1},
                                                 {"head_dim", 1}, {"ffn_hidden", 1}, {"layers", 1},
                                                 {"vocab", 0}};
inline const std::vector<std::string> mlp_kinds = {"gelu", "swiglu"};
inline const std::vector<std::string> model_keys = {"preset",   "hf_config",  "hidden", "heads",
                                                    "kv_heads", "head_dim",   "ffn_hidden", "layers",
                                                    "vocab",    "mlp",        "attention_dropout",
                                                    "hidden_dropout"};
// Dropout probabilities in the model section, each a number in [0, 1).
inline const std::vector<std::string> dropout_keys = {"attention_dropout", "hidden_dropout"};

inline const std::vector<std::string> workload_keys = {"seq_len", "batch",  "dtype",     "causal",
                                                       "mask",    "scope",  "passes",    "recompute"};
// workload.mask: a kind name, or {kind, documents, window, causal}; documents: a list of lengths or
// {distribution (models::document_distributions()), min_len, max_len, mean_len, seed}.
inline const std::vector<std::string> mask_kinds = {"causal", "full", "document_causal", "sliding_window"};
inline const std::vector<std::string> mask_keys = {"kind", "documents", "window", "causal"};
inline const std::vector<std::string> document_draw_keys = {"distribution", "min_len", "max_len", "mean_len",
                                                            "pad_to", "seed"};
inline const std::vector<std::string> workload_dtypes = {"bf16", "fp16", "float32", "float64"};
inline const std::vector<std::string> scopes = {"attention", "layer", "model"};
inline const std::vector<std::string> passes = {"fwd", "fwd+bwd"};

inline const std::vector<std::string> strategy_keys = {"name", "degree", "options"};
inline const std::vector<std::string> layer_keys = {"name", "options"};
inline const std::vector<std::string> parallel_keys = {"tp", "cp", "dp", "bucket_mb", "distributed_optimizer"};

// The `collectives` section: one key per kind whose algorithm a config chooses (rt::tuned_kinds()) and
// "protocol". The valid values are the simulator's (derived, not copied): a collectives-registry
// algorithm implementing the kind, or one of its aliases, or "auto"; protocols from sim::Protocol.
[[nodiscard]] std::vector<std::string> collectives_keys();
[[nodiscard]] std::vector<std::string> algorithm_choices(rt::CommKind kind);  // "auto" first
[[nodiscard]] std::vector<std::string> protocol_choices();                    // "auto" first
// The registry name `name` stands for (an alias resolved; "auto" stays "auto").
[[nodiscard]] std::string canonical_algorithm(const std::string& name);

inline const std::vector<std::string> simulation_keys = {"network", "trace_out", "compute_slowdown",
                                                         "attention_kernel"};
[[nodiscard]] std::vector<std::string> networks();  // sim::NetworkMode names

inline const std::vector<std::string> check_keys = {"dtype", "seed"};
inline const std::vector<std::string> check_dtypes = {"float64", "float32"};

}  // namespace spsim::analysis::schema
