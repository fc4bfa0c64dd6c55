// Chrome trace export of a replay: one process per rank, one thread per stream (opens in Perfetto).
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/trace_format.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/memory/memory.hpp"
#include "sim/replay/replay.hpp"

namespace spsim::analysis {

// Writes the Trace Event Format's JSON object form: {"traceEvents": [...], "displayTimeUnit": "ns"}.
// Per rank r: process r named "rank r (GPU name)"; thread 0 "compute" (one "X" event per launched
// op, args: class, flops, bytes), thread 1 "comm" (one "X" event per op from ready to end, args:
// bytes, bytes_sent, wait_us before the data moved, algorithm, protocol), thread 2 "phases"; and a
// "memory" counter (MiB live). Timestamps are microseconds. InputError at `where` when the file
// cannot be written.
void write_chrome_trace(const std::filesystem::path& path, const std::string& where,
                        std::span<const rt::trace::RankTrace> traces, const sim::ReplayResult& replay,
                        const sim::Cluster& cluster, std::span<const sim::MemoryProfile> memory);

}  // namespace spsim::analysis
