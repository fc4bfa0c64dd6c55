// Ring Self-Attention (ColossalAI): registration; the per-rank implementation follows.
#include <stdexcept>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

void register_rsa(Registry& registry) {
  StrategyInfo info;
  info.name = "rsa";
  info.description =
      "ColossalAI Ring Self-Attention: P-1 ring passes of K then of V build full s/P x s score rows; "
      "backward reduces the full-length dK/dV";
  info.options = {{"grad_reduction",
                   "how dK/dV partials are reduced in backward",
                   {"allreduce_slice_div", "allreduce_slice", "reduce_scatter", "ring"},
                   "allreduce_slice_div"}};
  info.check = [](const models::AttnProblem& p, int degree, const Options&) -> std::optional<std::string> {
    if (p.seq_len % degree != 0)
      return "seq_len " + std::to_string(p.seq_len) + " is not divisible by the degree " + std::to_string(degree);
    return std::nullopt;
  };
  info.positions = [](int rank, int degree, std::int64_t seq, const Options&) {
    return contiguous_positions(rank, degree, seq);
  };
  info.create = [](StrategyContext) -> std::unique_ptr<AttentionStrategy> {
    throw std::logic_error("rsa: not implemented yet");
  };
  registry.add(std::move(info));
}

}  // namespace spsim::strategies
