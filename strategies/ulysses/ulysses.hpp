// DeepSpeed-Ulysses' models (the SPMD code is ulysses.cpp): its closed form and memory model, and the
// all-to-all level USP reuses.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/comm.hpp"
#include "strategies/model/scope.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// The all-to-alls of one Ulysses group (strategies/ulysses/ulysses.cpp) around an attention on H/u heads;
// derivation in closed_form.cpp. `group`: the group's SP ranks (u = its size); every member
// holds c = s/P tokens of each sequence-sharded tensor.
class UlyssesExchange {
 public:
  UlyssesExchange(const StepConfig& c, const Hardware& hw, std::vector<int> group);
  void qkv_to_heads(Timeline& t) const;       // [replicate K, V]; q, k, v to the head layout
  void o_to_sequence(Timeline& t) const;      // o back to the sequence layout
  void do_to_heads(Timeline& t) const;        // dO to the head layout
  void grads_to_sequence(Timeline& t) const;  // dq, dk, dv back; [sum the K/V replicas]
  // Copies of each kv head sent: 1, or u/Hkv with kv_replication when Hkv < u.
  [[nodiscard]] std::int64_t kv_replication() const { return rep_; }

 private:
  [[nodiscard]] double op(const rt::OpCost& c) const { return hw_.op_time_s(c); }
  [[nodiscard]] double numel(std::int64_t heads) const;
  [[nodiscard]] rt::Shape flat(std::int64_t heads) const;
  // One all-to-all of `elements` per rank; pack / unpack: its input / output chunks are strided.
  void all_to_all(Timeline& t, double elements, bool pack, bool unpack) const;
  void all_to_all_one(Timeline& t, std::int64_t heads, bool to_heads) const;
  [[nodiscard]] double replicate(bool reduce) const;
  void exchange_three(Timeline& t, bool to_heads) const;

  const Hardware& hw_;
  rt::DType dt_;
  bool fused_;
  std::vector<int> group_;
  std::int64_t u_, b_, h_, c_, d_, rep_, hkv_;
};

[[nodiscard]] Modelled<CostEstimate> ulysses_closed_form(const StepConfig& config, const Hardware& hw);
// Ulysses over groups of u ranks around an inner attention on the head-sharded q, k, v: a local block
// (ring_r = 0) or Ring Attention over ring groups of ring_r ranks (usp), whose moments sit on top.
[[nodiscard]] std::vector<Moment> ulysses_level_moments(const StepConfig& c, int u, int ring_r,
                                                        bool backward);
[[nodiscard]] Modelled<MemoryEstimate> ulysses_memory(const StepConfig& c);

}  // namespace spsim::strategies
