// The --json documents of the commands (schema_version 1; keys documented in the README), as text.
// Each is deterministic: the same inputs give byte-identical text.
#pragma once

#include <string>

#include "analysis/check/check.hpp"
#include "analysis/compare/compare.hpp"
#include "analysis/run/run.hpp"
#include "analysis/simulate/collective.hpp"
#include "analysis/simulate/simulate.hpp"

namespace spsim::analysis {

// check: schema_version, command, config, strategy{name,degree,options}, scope, dtype, tolerance, pass,
// tensors[]{name, shape, rel_err, max_abs_err, alpha, residual, pass, diagnosis}.
[[nodiscard]] std::string check_json(const CheckResult& result);
// simulate: schema_version, command, config, strategy{name,degree,options}, workload, parallel,
// cluster{name,gpu,gpus,network}, compute_slowdown, compute_slowdown_basis, step_time_s, forward_s, backward_s,
// critical_rank{...}, bytes_sent_by_kind, bytes_sent_max, peak_memory_bytes, gpu_memory_bytes, oom,
// algorithms, skipped_ops, events, ranks[...], top_ops[...].
[[nodiscard]] std::string simulation_json(const Config& config, const SimSummary& summary);
// compare: schema_version, command, name, axes, baseline_row, closed_form_tolerance, rows[].
[[nodiscard]] std::string compare_json(const CompareResult& result);
// collective: schema_version, command, cluster, nodes, ranks, op, network, rows[]{size_bytes, count, type,
// redop, algorithm, protocol, time_us, algbw_GBps, busbw_GBps}.
[[nodiscard]] std::string collective_json(const CollectiveSweep& sweep);
// run: schema_version, command, config, strategy, scope, dtype, device, comm, iters, warmup, phases[],
// verify (the check document or null), prediction{available, cluster, phases[] | note}.
[[nodiscard]] std::string run_json(const RunMeasurement& measurement, const Prediction& prediction);

}  // namespace spsim::analysis
