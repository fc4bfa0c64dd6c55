// The host memory `check` and `run` need for a config's shapes, estimated before anything is allocated,
// so that a shape too large for the machine is an exit-2 message naming what drives it rather than a
// killed process.
//
// The parts, in bytes (E = elements; the host arrays are float64):
//   attention scope, A = (2·B·H + 2·B·Hkv)·s·d (q, dO, k, v or their results)
//     inputs     2A   the generated q, k, v, dO and the copies kept for --dump
//     reference  2A + W·2·s²   its outputs and gradients, and per worker thread (W of them, at most the
//                               cores) the s × s probabilities and score gradients
//     results    2A   the strategy's outputs and gradients in global order, and the ranks' host copies
//   layer scope, X = B·s·hidden, L = the layer's parameters
//     inputs     2L + 4X          the parameters, x and dY, and their --dump copies
//     reference  (12·hidden + 4·ffn)·B·s + 2·s² + 2L   the reference layer's activations, one head's
//                               s × s buffers, the gradients
//     results    2X + 2L          Y, dX and the summed weight gradients
//   ranks      the step's tensors on every rank in the computing dtype: the peak of the traced step
//              (strategies/step.hpp, the same program the ranks run), summed over the ranks, + 25% for
//              the communicator's message copies and the device's buffer cache.
// `run` holds the inputs once per process (every process generates them whole) and, with --verify, the
// reference on rank 0 and the gathered results on every process; the node's share of the processes is
// counted against this node's memory.
#pragma once

#include <string>

#include "analysis/config/config.hpp"
#include "runtime/host_memory.hpp"

namespace spsim::analysis {

struct HostMemoryEstimate {
  double inputs = 0;
  double reference = 0;
  double ranks = 0;
  double results = 0;
  int ranks_count = 0;
  [[nodiscard]] double total() const { return inputs + reference + ranks + results; }
};

[[nodiscard]] HostMemoryEstimate check_memory_estimate(const Config& config, const rt::MemoryLimit& limit);
// `local` of the `world` processes run on this node; `device_on_host`: the device is the CPU (its
// tensors are host memory; a GPU's are not counted).
[[nodiscard]] HostMemoryEstimate run_memory_estimate(const Config& config, int world, int local,
                                                     rt::DType dtype, bool verify, bool device_on_host,
                                                     const rt::MemoryLimit& limit);

// InputError at "workload" when the estimate exceeds the limit: the estimate by part, the limit and its
// source, the keys that drive it with their values, and that `spsim simulate` predicts such shapes.
void require_host_memory(const HostMemoryEstimate& estimate, const rt::MemoryLimit& limit,
                         const Config& config, const std::string& command);

}  // namespace spsim::analysis
