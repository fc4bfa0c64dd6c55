// Gradient check (DESIGN.md §8): run a strategy on tp × P CPU ranks (threads backend) and compare every
// output and gradient with the single-device float64 reference.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/check/comparison.hpp"
#include "analysis/config/config.hpp"

namespace spsim::analysis {

struct TensorCheck {
  std::string name;  // "O", "dQ", ..., "Y", "dX", "dWq", "dLN1.gamma", ...
  rt::Shape shape;
  Comparison cmp;
};

struct CheckResult {
  std::string config_name;
  std::string strategy;
  strategies::Options options;
  int degree = 1;  // the strategy's (CP) degree
  std::string layer;  // the layer strategy (layer scope), with its options
  strategies::Options layer_options;
  int tp = 1;
  rt::DType dtype = rt::DType::f64;
  models::Scope scope = models::Scope::attention;
  std::string mask;  // documents or a window (rt::MaskBounds::describe); empty for causal and full
  double tolerance = 0;
  std::vector<TensorCheck> tensors;
  [[nodiscard]] bool pass() const;
};

struct CheckOptions {
  std::filesystem::path dump_dir;  // empty: no dump; else inputs, outputs and gradients as .npy
  // Host memory the check may use (--max-memory), else what the machine has free: the shapes' estimated
  // need (analysis/check/memory_estimate.hpp) above it is an InputError before anything is allocated.
  std::optional<double> max_memory;
};

// The step a check runs: the strategy on one TP × SP group (data parallelism would only multiply the
// summed weight gradients), forward and backward whatever workload.passes says, every weight gradient summed
// in one bucket per reduction group at the end (so the numbers do not depend on parallel.bucket_mb).
[[nodiscard]] strategies::StepConfig check_step_config(const Config& config);

[[nodiscard]] CheckResult run_check(const Config& config, const CheckOptions& options = {});
// Comparing with the reference needs dropout off: each rank draws the mask of its own tensors, so no
// layout reproduces the reference's. Throws InputError at the model key (`what`: "check", "run --verify").
void require_no_dropout(const Config& config, const std::string& what);

[[nodiscard]] std::string render_check(const CheckResult& result);  // human table + summary

// Display name of a weight gradient: "wq" -> "dWq", "bq" -> "dbq", "ln1.gamma" -> "dLN1.gamma".
[[nodiscard]] std::string gradient_name(const std::string& param);

}  // namespace spsim::analysis
