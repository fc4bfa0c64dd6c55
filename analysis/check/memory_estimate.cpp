// Host memory estimates of check and run (the terms are derived in memory_estimate.hpp).
#include "analysis/check/memory_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "analysis/check/check.hpp"
#include "analysis/report/table.hpp"
#include "analysis/run/run.hpp"
#include "analysis/simulate/trace.hpp"
#include "runtime/core/error.hpp"
#include "runtime/trace/trace_ranks.hpp"
#include "strategies/layer.hpp"

namespace spsim::analysis {

namespace {

constexpr double kF64 = 8;              // bytes of a host (float64) element
constexpr double kRankOverhead = 1.25;  // message copies of the communicator, the device's buffer cache

struct HostArrays {
  double inputs = 0, reference = 0, results = 0;
};

HostArrays host_arrays(const Config& c) {
  const auto& m = c.model;
  const auto& w = c.workload;
  const double b = static_cast<double>(w.batch), s = static_cast<double>(w.seq_len);
  HostArrays out;
  if (w.scope == models::Scope::attention) {
    const double a = (2 * b * static_cast<double>(m.heads) + 2 * b * static_cast<double>(m.kv_heads)) * s *
                     static_cast<double>(m.head_dim);
    const double groups = b * static_cast<double>(m.kv_heads);
    const double workers =
        std::min(groups, static_cast<double>(std::max(1u, std::thread::hardware_concurrency())));
    out.inputs = 2 * a * kF64;
    out.reference = (2 * a + workers * 2 * s * s) * kF64;
    out.results = 2 * a * kF64;
    return out;
  }
  const double x = b * s * static_cast<double>(m.hidden), l = strategies::layer_params(m);
  out.inputs = (2 * l + 4 * x) * kF64;
  // The MLP's [rows, ffn] arrays and their gradients: u, g (and SwiGLU's up projection).
  const double mlp = m.mlp == models::Mlp::swiglu ? 6 : 4;
  out.reference = ((12 * static_cast<double>(m.hidden) + mlp * static_cast<double>(m.ffn_hidden)) * b * s +
                   2 * s * s + 2 * l) *
                  kF64;
  out.results = (2 * x + 2 * l) * kF64;
  return out;
}

// Every rank's peak in the computing dtype, from the trace of the step the ranks will run.
double ranks_bytes(const strategies::StepConfig& step, const Config& c, int world, rt::DType dtype,
                   const rt::MemoryLimit& limit) {
  std::vector<rt::trace::RankTrace> traces;
  try {
    traces = trace_step(step, c.strategy.info(), world, dtype, limit.bytes / 2);
  } catch (const ResourceError&) {
    return std::numeric_limits<double>::infinity();  // even the step's trace does not fit: refused
  }
  double total = 0;
  for (const auto& t : traces) total += static_cast<double>(rt::trace::peak_live_bytes(t));
  return kRankOverhead * total;
}

std::string drivers(const Config& c) {
  const auto& m = c.model;
  const auto& w = c.workload;
  std::string out =
      "workload.seq_len = " + std::to_string(w.seq_len) + ", workload.batch = " + std::to_string(w.batch);
  if (w.scope == models::Scope::attention)
    out += ", model.heads = " + std::to_string(m.heads) + ", model.kv_heads = " + std::to_string(m.kv_heads) +
           ", model.head_dim = " + std::to_string(m.head_dim);
  else
    out += ", model.hidden = " + std::to_string(m.hidden) +
           ", model.ffn_hidden = " + std::to_string(m.ffn_hidden) +
           ", model.heads = " + std::to_string(m.heads);
  out += ", strategy.degree = " + std::to_string(c.strategy.degree);
  if (c.parallel.tp > 1) out += ", parallel.tp = " + std::to_string(c.parallel.tp);
  return out;
}

}  // namespace

HostMemoryEstimate check_memory_estimate(const Config& config, const rt::MemoryLimit& limit) {
  const HostArrays h = host_arrays(config);
  const int world = config.parallel.tp * config.strategy.degree;  // check runs dp 1
  HostMemoryEstimate e{h.inputs, h.reference, 0, h.results, world};
  // The arrays alone too large: no need to trace (and their shapes may be too large to trace).
  if (e.total() <= limit.bytes) {
    const auto step = check_step_config(config);
    e.ranks = ranks_bytes(step, config, world, config.check.dtype, limit);
  }
  return e;
}

HostMemoryEstimate run_memory_estimate(const Config& config, int world, int local, rt::DType dtype,
                                       bool verify, bool device_on_host, const rt::MemoryLimit& limit) {
  const HostArrays h = host_arrays(config);
  const double l = local;
  // Rank 0 (on the first node) holds the reference; count it wherever this estimate runs.
  HostMemoryEstimate e{l * h.inputs / 2, verify ? h.reference : 0, 0, verify ? l * h.results : 0, local};
  if (device_on_host && e.total() <= limit.bytes)
    e.ranks = ranks_bytes(run_step_config(config), config, world, dtype, limit) * l / world;
  return e;
}

void require_host_memory(const HostMemoryEstimate& e, const rt::MemoryLimit& limit, const Config& config,
                         const std::string& command) {
  if (e.total() <= limit.bytes) return;
  std::string parts = "inputs " + format_bytes(e.inputs);
  if (e.reference > 0) parts += ", the float64 reference " + format_bytes(e.reference);
  if (std::isinf(e.ranks))
    parts += ", " + std::to_string(e.ranks_count) + " ranks' tensors: their trace alone does not fit";
  else if (e.ranks > 0)
    parts += ", " + std::to_string(e.ranks_count) + " ranks' tensors " + format_bytes(e.ranks);
  if (e.results > 0) parts += ", results " + format_bytes(e.results);
  const std::string need = std::isinf(e.total()) ? "more" : "about " + format_bytes(e.total());
  throw ResourceError("workload", command + " needs " + need + " of host memory for these shapes (" + parts +
                                      "), more than the " + format_bytes(limit.bytes) + " available (" +
                                      limit.source + "; --max-memory sets the limit); it grows with " +
                                      drivers(config) +
                                      ". `spsim simulate` predicts such shapes without data");
}

}  // namespace spsim::analysis
