// Ring Attention's models (the SPMD code is ring.cpp): its closed form and memory model, and the ring
// level USP reuses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strategies/model/scope.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// Ring Attention (ring.cpp) over ring groups of r = P/u ranks on the H/u query heads (and
// Hkv·rep/u kv heads) one Ulysses level of degree u hands each rank; u = 1 is the ring strategy.
// Derivation in closed_form.cpp. `i`: the rank's position in its ring (its rows are the layout's
// share i of r).
// Option backward_sends of ring.cpp: whether a backward step posts its dK/dV accumulator with the next
// K/V block in one launch (packed); absent is separate (USP passes its own option to its ring level).
[[nodiscard]] bool ring_backward_packed(const Options& o);

class RingLevel {
 public:
  RingLevel(const StepConfig& c, const Hardware& hw, int u, std::int64_t kv_replication);
  [[nodiscard]] int size() const { return p_; }
  void forward(Timeline& t, int i) const;
  void backward(Timeline& t, int i) const;

 private:
  [[nodiscard]] double op(const rt::OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] rt::Shape q() const { return {bh_, n_, d_}; }
  [[nodiscard]] rt::Shape kv() const { return {bkv_, n_, d_}; }
  [[nodiscard]] double kv_bytes() const;
  [[nodiscard]] double acc_bytes() const;  // one dK (= dV) accumulator, at accumulator_dtype
  [[nodiscard]] rt::Mask mask(int r, int owner) const;

  const Hardware& hw_;
  rt::DType dt_;
  bool causal_;
  rt::MaskBounds bounds_;
  int p_;
  bool packed_;  // backward_sends = packed
  std::int64_t n_, bh_, bkv_, d_;
  void backward_separate(Timeline& t, int i) const;
  void backward_packed(Timeline& t, int i) const;
  double pass_ = 0;                       // the K and V passes of one step, seconds
  double acc_pass_ = 0;                   // the fp32 dK and dV accumulator passes (separate), seconds
  std::vector<rt::Positions> positions_;  // per ring position (= per owner of a K/V block)
};

[[nodiscard]] Modelled<CostEstimate> ring_closed_form(const StepConfig& config, const Hardware& hw);
// K/V blocks a Ring Attention rank holds beyond its inputs over a ring of p ranks, k = one block: the
// block in use and the one arriving.
[[nodiscard]] double ring_forward_buffers(int p, double k);
// The sizes of one ring level's backward: its q (and dq), one K/V block, the accumulator's width over
// the dtype's (rt::accumulator_dtype) and the name of its returned gradients.
struct RingBackwardSizes {
  int p = 1;
  double q = 0, k = 0, acc_ratio = 1;
  std::string grads = "dq, dk, dv";
};
// The ring backward's moments on top of `held` (what the step and the level around it keep).
[[nodiscard]] std::vector<Moment> ring_backward_moments(const std::vector<MemoryTerm>& held,
                                                        const RingBackwardSizes& s, bool packed);
[[nodiscard]] std::vector<Moment> ring_moments(const StepConfig& c, bool backward);
[[nodiscard]] Modelled<MemoryEstimate> ring_memory(const StepConfig& c);

}  // namespace spsim::strategies
