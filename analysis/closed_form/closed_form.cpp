// The registered closed forms of a config's strategy, on its cluster.
#include "analysis/closed_form/closed_form.hpp"

namespace spsim::analysis {

strategies::StepConfig step_config(const Config& c) {
  strategies::StepConfig s;
  s.model = c.model;
  s.workload = c.workload;
  s.degree = c.strategy.degree;
  s.options = c.strategy.options;
  s.tp = c.parallel.tp;
  s.layer = &c.layer.info();
  s.layer_options = c.layer.options;
  s.dp = c.parallel.dp;
  s.distributed_optimizer = c.parallel.distributed_optimizer;
  s.bucket_bytes = c.parallel.bucket_bytes();
  s.compute_slowdown = c.simulation.compute_slowdown;
  return s;
}

Modelled<CostEstimate> closed_form(const Config& config, const strategies::Hardware& hw) {
  const auto& info = config.strategy.info();
  if (!info.closed_form) return Modelled<CostEstimate>::none(info.no_closed_form);
  return info.closed_form(step_config(config), hw);
}

namespace {

// The cluster's HardwareModel, built on the first question: a closed form outside its scope (layer or
// model scope, dp > 1) answers without asking, and then no cluster is built for it.
class LazyHardware final : public strategies::Hardware {
 public:
  explicit LazyHardware(const Config& config) : config_(config) {}
  [[nodiscard]] int ranks() const override { return hw().ranks(); }
  [[nodiscard]] double gpu_memory_bytes() const override { return hw().gpu_memory_bytes(); }
  [[nodiscard]] double op_time_s(const rt::OpCost& cost) const override { return hw().op_time_s(cost); }
  [[nodiscard]] double ring_pass_s(double bytes, const std::vector<int>& group) const override {
    return hw().ring_pass_s(bytes, group);
  }
  [[nodiscard]] double collective_s(rt::CommKind kind, double bytes,
                                    const std::vector<int>& group) const override {
    return hw().collective_s(kind, bytes, group);
  }

 private:
  [[nodiscard]] const HardwareModel& hw() const {
    if (!hw_) hw_ = std::make_unique<HardwareModel>(config_);
    return *hw_;
  }
  const Config& config_;
  mutable std::unique_ptr<HardwareModel> hw_;
};

}  // namespace

Modelled<CostEstimate> closed_form(const Config& config) {
  const LazyHardware hw(config);
  return closed_form(config, hw);
}

Modelled<MemoryEstimate> memory_model(const Config& config) {
  const auto& info = config.strategy.info();
  if (!info.memory) return Modelled<MemoryEstimate>::none(info.no_memory);
  return info.memory(step_config(config));
}

}  // namespace spsim::analysis
