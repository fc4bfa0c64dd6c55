// Step plans: the shared executor for algorithms made of synchronous exchange steps (ring,
// pairwise, recursive halving-doubling).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "sim/collectives/algorithm.hpp"

namespace spsim::sim {

// At step s the participant at position p sends bytes(s) to position send_to(s, p). A participant
// starts step s + 1 once its step-s send has arrived and it has received every step up to s (the
// data dependency of a ring or butterfly: what it sends next was just received). Positions map to
// the call's ranks through `ranks` (a ring channel's order).
struct StepPlan {
  std::vector<int> ranks;  // position -> rank of the call
  int steps = 0;
  std::function<int(int step, int pos)> send_to;
  std::function<double(int step)> bytes;
  // When set, the rank a transfer is addressed to, if not ranks[send_to(s, p)]: in a folded ring
  // (CollectiveRun::fold_nodes) the hop out of node 0 goes to node 1's counterpart of the position
  // it stands for. The dependency stays on position send_to(s, p).
  std::function<int(int step, int pos)> send_rank;
};

// Runs the plans concurrently (e.g. one per ring channel); `done` once every transfer has arrived.
void run_step_plans(const std::shared_ptr<CollectiveRun>& run, std::vector<StepPlan> plans,
                    std::function<void()> done);

}  // namespace spsim::sim
