// CollectiveCall / CollectiveResult: one collective as the replay engine describes it, and its outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/cluster/cluster.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/time.hpp"

namespace spsim::sim {

struct CollectiveCall {
  CommKind kind = CommKind::all_reduce;
  std::vector<DeviceId> ranks;  // GPU device ids in rank order (e.g. cluster.gpus()), all distinct
  // n, in bytes, the size of the largest per-rank buffer, as in nccl-tests' "size" column and
  // rt::Comm's shapes: all_reduce the buffer; reduce_scatter the input (output n/P); all_gather
  // the output (input n/P); all_to_all the send buffer (n/P to each rank); sendrecv the message
  // each rank sends. Fractional values are allowed.
  double bytes = 0;
  std::string algorithm = "auto";    // a registry name or alias (see default_algorithms()) or "auto"
  std::optional<Protocol> protocol;  // nullopt: "auto", the tuner's pick
  int peer_offset = 1;               // sendrecv: rank i sends to i + offset, receives from i - offset (mod P)
};

struct CollectiveResult {
  Time start{};
  Time finish{};  // when the last transfer of the call arrived
  std::string algorithm;
  Protocol protocol = Protocol::simple;
  std::vector<Time> rank_finish;   // per rank: arrival of its last transfer (sent or received)
  std::vector<double> bytes_sent;  // per rank: payload bytes it put on the network (no protocol overhead)
  bool folded = false;             // node 0's share was simulated and stands for every node (fold_nodes)
  [[nodiscard]] Time duration() const { return finish - start; }
};

// The algorithm/protocol a call resolves to and the tuner's predicted time for it.
struct CollectiveChoice {
  std::string algorithm;
  Protocol protocol = Protocol::simple;
  double predicted_s = 0;  // the algorithm's estimate_s (a fit's time for "fitted")
  Time predicted{};        // the same, rounded to the simulator's picoseconds
};

}  // namespace spsim::sim
