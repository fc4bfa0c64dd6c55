// The one vocabulary of communication kinds: what the trace records, what the threads backend stamps
// its messages with, what the simulator runs, what `spsim run` times, and what the config schema and
// the CLI list. Names, groupings and nccl-tests' bus-bandwidth factors live here and nowhere else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spsim::rt {

// In report order (`spsim run`'s rows, bytes by kind).
enum class CommKind : std::uint8_t {
  all_reduce,
  reduce_scatter,
  all_gather,
  all_to_all,
  send,
  recv,
  sendrecv,
  barrier
};
inline constexpr int kCommKinds = 8;

[[nodiscard]] std::string_view comm_kind_name(CommKind k);
// Every kind by name ("all_reduce", ...), nullopt if unknown.
[[nodiscard]] std::optional<CommKind> parse_comm_kind(std::string_view name);

// Group-wide calls matched by sequence number (all_reduce, reduce_scatter, all_gather, all_to_all,
// barrier), as opposed to point-to-point messages (send, recv, sendrecv).
[[nodiscard]] bool is_group_collective(CommKind k);

// The operations the simulator's collective API runs and nccl-tests measures (`spsim collective
// --op`, a cluster's collective_fits): all_reduce, reduce_scatter, all_gather, all_to_all, sendrecv.
[[nodiscard]] bool is_collective_op(CommKind k);
[[nodiscard]] const std::vector<CommKind>& collective_ops();
// One of collective_ops() by name; "p2p" is accepted for sendrecv.
[[nodiscard]] std::optional<CommKind> parse_collective_op(std::string_view name);
// "all_reduce, reduce_scatter, all_gather, all_to_all, sendrecv" (for messages and --help).
[[nodiscard]] std::string collective_op_choices();

// The kinds whose algorithm a config chooses (`collectives.<kind>`; the replay's per-kind algorithm):
// all_reduce, reduce_scatter, all_gather, all_to_all. Their enum values are 0..3.
inline constexpr int kTunedKinds = 4;
[[nodiscard]] const std::vector<CommKind>& tuned_kinds();

// nccl-tests' bus-bandwidth factor f(P) (busbw = algbw · f; its doc/PERFORMANCE.md, DESIGN.md §6):
// 2(P−1)/P all-reduce; (P−1)/P reduce-scatter, all-gather, all-to-all; 1 sendrecv (and send/recv);
// 0 barrier.
[[nodiscard]] double bus_bandwidth_factor(CommKind k, int ranks);

}  // namespace spsim::rt
