// HardwareModel: a config's cluster as the closed forms see it (strategies/model/estimate.hpp's
// Hardware), answered with the simulator's own functions: the compute model's roofline per op, each
// collective algorithm's estimate (sim/collectives/<alg>.cpp, Algorithm::estimate_s) for the algorithm
// the tuner or the config picks, and Collectives::send_estimate_s for a ring pass. No formula of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/config/config.hpp"
#include "strategies/model/estimate.hpp"

namespace spsim::analysis {

class HardwareModel final : public strategies::Hardware {
 public:
  // The SP group is ranks 0..P−1 on the cluster's first P GPUs. InputError when the config has no
  // cluster or a degree larger than it.
  explicit HardwareModel(const Config& config);
  ~HardwareModel() override;
  HardwareModel(const HardwareModel&) = delete;
  HardwareModel& operator=(const HardwareModel&) = delete;

  [[nodiscard]] int ranks() const override;
  [[nodiscard]] double gpu_memory_bytes() const override;
  [[nodiscard]] double op_time_s(const rt::OpCost& cost) const override;
  [[nodiscard]] double ring_pass_s(double bytes, const std::vector<int>& group) const override;
  [[nodiscard]] double collective_s(rt::CommKind kind, double bytes,
                                    const std::vector<int>& group) const override;
  using Hardware::collective_s;
  using Hardware::ring_pass_s;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spsim::analysis
