// nccl-tests output files (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
// sendrecv_perf): parsing of their text table, and per-collective α-β fits the simulator reads as
// "collective_fits" (sim/collectives/fitted.hpp).
//
// The format (nccl-tests src/common.cu): '#' comment lines — among them "# Collective test starting:
// all_reduce_perf" (newer versions), "# nThread 1 nGpus 8 minBytes ...", one "#  Rank  N Group ... device"
// line per rank, and the column header
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw
//   busbw #wrong #        (B)    (elements)                               (us)  (GB/s)  (GB/s) (us)  (GB/s)
//   (GB/s)
// (older versions have no redop column and an "error" column) — then one row per size, the out-of-place
// columns then the in-place ones. Lines launched through mpirun may carry a "[1,0]<stdout>:" prefix.
//
// The collective comes from the "Collective test starting" line, else from the file name
// (all_reduce_perf.txt, ...). The number of ranks is the count of "Rank" lines; without them it is
// recovered from busbw / algbw = f_K(P) (the bus-bandwidth factor of fitted.hpp) on the largest row.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/calibrate/fit.hpp"
#include "sim/collectives/kinds.hpp"

namespace spsim::analysis {

struct NcclTestsRow {
  double size_bytes = 0;
  double count = 0;
  std::string type;
  double time_us = 0;  // out-of-place
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  double in_place_time_us = 0;  // 0 when the column is absent
};

struct NcclTestsTable {
  std::string source;  // file name, for messages
  std::string test;    // "all_reduce_perf", ...
  rt::CommKind kind = rt::CommKind::all_reduce;
  int ranks = 0;
  std::vector<NcclTestsRow> rows;
};

// Parses one file's text; `source` names it in errors (InputError where = source, message with the
// line number) and is where the test name is looked for when the text does not say.
[[nodiscard]] NcclTestsTable parse_nccl_tests(const std::string& text, const std::string& source);
[[nodiscard]] NcclTestsTable load_nccl_tests(const std::filesystem::path& path);

struct NcclTestsFit {
  rt::CommKind kind = rt::CommKind::all_reduce;
  int ranks = 0;
  double latency_s = 0;  // α
  double busbw_Bps = 0;  // B (bytes per second); time = α + size · f_K(P) / B
  LineFit line;          // the fit of time (s) against size · f_K(P) (bytes)
  std::string source;
};

// Fits the out-of-place times of every row (time > 0) with fit_line.
[[nodiscard]] NcclTestsFit fit_nccl_tests(const NcclTestsTable& table);

// The cluster file `spsim calibrate --nccl-tests` writes, as JSON text ending in '\n':
// {"preset": preset (when not empty), "collective_fits": {"all_reduce": {"latency_us", "busbw_GBps",
// "ranks", "source", "residual"}, ...}}. Two fits of the same kind are an InputError (which file to
// believe?); with a preset the text is checked as a cluster section (InputError at "--cluster").
[[nodiscard]] std::string nccl_tests_cluster_text(const std::vector<NcclTestsFit>& fits,
                                                  const std::string& preset);
// The --json document: {"schema_version": 1, "command": "calibrate", "cluster": the file above}.
[[nodiscard]] std::string nccl_tests_json(const std::vector<NcclTestsFit>& fits, const std::string& preset);

}  // namespace spsim::analysis
