// Strategy interface and registry: SPMD per-rank code for one sequence-parallel attention scheme.
//
// A strategy is written once against rt::Device and rt::Comm and runs unchanged on every backend
// (cpu+threads for `check`, trace for `simulate`, cpu+mpi and cuda+nccl for `run`).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/spec.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"

namespace spsim::strategies {

// Validated string-valued options ("grad_reduction" -> "reduce_scatter", "layout" -> "zigzag", ...).
using Options = std::map<std::string, std::string>;

struct OptionSpec {
  std::string name;
  std::string description;
  std::vector<std::string> choices;  // empty: any non-negative integer
  std::string default_value;
};

// Everything one rank needs to run the strategy.
struct StrategyContext {
  rt::Device& dev;
  rt::Comm& comm;  // the sequence-parallel group
  models::AttnProblem problem;
  Options options;                       // complete: every option present (defaults filled in)
  std::vector<std::int64_t> positions;   // global token positions of this rank's rows, in local order
};

struct AttnGrads {
  rt::Tensor dq, dk, dv;
};

// The attention core on one rank's shard. q: [B*H, s_local, d]; k, v: [B*Hkv, s_local, d] where
// s_local = positions.size() and the rows are the tokens at `positions`. Instances keep what their
// backward needs (as an autograd context) and are used for one forward then one backward.
class AttentionStrategy {
 public:
  virtual ~AttentionStrategy() = default;
  [[nodiscard]] virtual rt::Tensor forward(const rt::Tensor& q, const rt::Tensor& k, const rt::Tensor& v) = 0;
  [[nodiscard]] virtual AttnGrads backward(const rt::Tensor& d_o) = 0;
};

struct StrategyInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Reason the problem cannot run at this degree with these options, or nullopt.
  std::function<std::optional<std::string>(const models::AttnProblem&, int degree, const Options&)> check;
  // Global token positions held by `rank` (the sequence layout), in local row order.
  std::function<std::vector<std::int64_t>(int rank, int degree, std::int64_t seq_len, const Options&)> positions;
  std::function<std::unique_ptr<AttentionStrategy>(StrategyContext)> create;
};

class Registry {
 public:
  void add(StrategyInfo info);
  [[nodiscard]] const StrategyInfo* find(const std::string& name) const;  // nullptr if unknown
  [[nodiscard]] std::vector<std::string> names() const;
  // Fills defaults and validates every option; throws InputError naming `where` + ".<option>".
  [[nodiscard]] Options complete_options(const StrategyInfo& info, const Options& given,
                                         const std::string& where) const;

 private:
  std::vector<StrategyInfo> infos_;
};

// The built-in strategies (immutable, built on first use).
[[nodiscard]] const Registry& builtin();

// Contiguous layout: rank r holds tokens [r*s/P, (r+1)*s/P).
[[nodiscard]] std::vector<std::int64_t> contiguous_positions(int rank, int degree, std::int64_t seq_len);

}  // namespace spsim::strategies
