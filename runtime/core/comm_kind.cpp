// Names, groupings and bus-bandwidth factors of the communication kinds.
#include "runtime/core/comm_kind.hpp"

#include <array>

namespace spsim::rt {

namespace {

constexpr std::array<std::string_view, kCommKinds> kNames = {
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv", "sendrecv", "barrier"};

}  // namespace

std::string_view comm_kind_name(CommKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kNames.size() ? kNames[i] : "?";
}

std::optional<CommKind> parse_comm_kind(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<CommKind>(i);
  return std::nullopt;
}

bool is_group_collective(CommKind k) {
  return k != CommKind::send && k != CommKind::recv && k != CommKind::sendrecv;
}

bool is_collective_op(CommKind k) {
  return k != CommKind::send && k != CommKind::recv && k != CommKind::barrier;
}

const std::vector<CommKind>& collective_ops() {
  static const std::vector<CommKind> ops = {CommKind::all_reduce, CommKind::reduce_scatter,
                                            CommKind::all_gather, CommKind::all_to_all, CommKind::sendrecv};
  return ops;
}

std::optional<CommKind> parse_collective_op(std::string_view name) {
  if (name == "p2p") return CommKind::sendrecv;
  const auto k = parse_comm_kind(name);
  return k && is_collective_op(*k) ? k : std::nullopt;
}

std::string collective_op_choices() {
  std::string out;
  for (CommKind k : collective_ops()) out += (out.empty() ? "" : ", ") + std::string(comm_kind_name(k));
  return out;
}

const std::vector<CommKind>& tuned_kinds() {
  static const std::vector<CommKind> kinds = {CommKind::all_reduce, CommKind::reduce_scatter,
                                              CommKind::all_gather, CommKind::all_to_all};
  return kinds;
}

double bus_bandwidth_factor(CommKind k, int ranks) {
  const double p = ranks;
  switch (k) {
    case CommKind::all_reduce:
      return 2.0 * (p - 1) / p;
    case CommKind::send:
    case CommKind::recv:
    case CommKind::sendrecv:
      return 1.0;
    case CommKind::barrier:
      return 0.0;
    default:
      return (p - 1) / p;
  }
}

}  // namespace spsim::rt
