// Measured per-collective α-β fits (nccl-tests tables, `spsim calibrate`) that stand in for the
// algorithm model of a collective kind on the cluster they were measured on.
//
// A fit of kind K measured on P ranks predicts a call of K on a group of P ranks moving n bytes
// (n as in CollectiveCall::bytes, nccl-tests' "size") as
//     T(n) = α + n · f_K(P) / B
// with α the latency, B the bus bandwidth as nccl-tests defines it (busbw = algbw · f_K(P), so that
// B is the per-link rate of a bandwidth-optimal algorithm) and f_K its bus-bandwidth factor:
// 2(P−1)/P all-reduce; (P−1)/P reduce-scatter, all-gather, all-to-all; 1 sendrecv
// (nccl-tests doc/PERFORMANCE.md; DESIGN.md §6).
//
// When it applies: calls with algorithm "auto" on a group of exactly the measured size. Explicit
// algorithms and other group sizes use the algorithm model (a fit says nothing about them).
// A sendrecv fit also times every point-to-point message (Collectives::send: the replay's ring passes),
// whatever the pair: sendrecv_perf measures exactly that, each rank sending to a neighbour at once.
// A fitted call is a measured black box: it moves no bytes through the simulated network, so it
// neither slows nor is slowed by concurrent traffic. Its bytes_sent per rank are those of the
// bandwidth-optimal algorithm, n · f_K(P).
//
// JSON (the "collective_fits" key of a cluster section, parsed by analysis/config/cluster.cpp):
//   "collective_fits": { "all_reduce": { "latency_us": 12.5, "busbw_GBps": 180, "ranks": 8,
//                                        "source": "...", "residual": 0.03 }, ... }
// keyed by collective kind name; "source" and "residual" (relative RMS error of the fit) are notes.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "sim/collectives/kinds.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

struct CollectiveFit {
  Time latency{};        // α
  double busbw_Bps = 0;  // B, bytes per second
  int ranks = 0;         // P the measurement was taken on
  std::string source;
  double residual = 0;  // relative RMS error of the fit (informational)
};

// The algorithm name a fitted call reports (CollectiveResult::algorithm, CollectiveChoice).
inline constexpr const char* kFittedAlgorithm = "fitted";

// Indexed by CommKind.
using CollectiveFits = std::array<std::optional<CollectiveFit>, rt::kCommKinds>;

// T(n) above.
[[nodiscard]] Time fitted_time(const CollectiveFit& fit, CommKind kind, double bytes);

// The fit that replaces the model for a call of `kind` with `algorithm` on `group_size` ranks, or nullptr.
[[nodiscard]] const CollectiveFit* applicable_fit(const CollectiveFits& fits, CommKind kind,
                                                  const std::string& algorithm, int group_size);

}  // namespace spsim::sim
