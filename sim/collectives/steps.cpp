// Step-plan executor: per-position progress counters and received-step flags.
#include "sim/collectives/steps.hpp"

namespace spsim::sim {

namespace {

struct PlanState {
  StepPlan plan;
  std::vector<int> started, sends_done, recv_ready;
  std::vector<char> received;  // [pos * steps + step]
};

struct StepExecutor : std::enable_shared_from_this<StepExecutor> {
  std::shared_ptr<CollectiveRun> run;
  std::vector<PlanState> plans;
  std::size_t outstanding = 0;  // transfers not yet arrived, over all plans
  std::function<void()> done;

  void try_advance(std::size_t k, int pos) {
    PlanState& p = plans[k];
    const auto i = static_cast<std::size_t>(pos);
    const int s = p.started[i];
    if (s >= p.plan.steps || p.sends_done[i] < s || p.recv_ready[i] < s) return;
    ++p.started[i];
    const int to = p.plan.send_to(s, pos);
    const int to_rank =
        p.plan.send_rank ? p.plan.send_rank(s, pos) : p.plan.ranks[static_cast<std::size_t>(to)];
    run->transfer(p.plan.ranks[i], to_rank, p.plan.bytes(s),
                  [self = shared_from_this(), k, pos, to, s] { self->arrived(k, pos, to, s); });
  }

  void arrived(std::size_t k, int pos, int to, int s) {
    PlanState& p = plans[k];
    const auto steps = static_cast<std::size_t>(p.plan.steps);
    const auto t = static_cast<std::size_t>(to);
    ++p.sends_done[static_cast<std::size_t>(pos)];
    p.received[t * steps + static_cast<std::size_t>(s)] = 1;
    while (p.recv_ready[t] < p.plan.steps &&
           p.received[t * steps + static_cast<std::size_t>(p.recv_ready[t])])
      ++p.recv_ready[t];
    --outstanding;
    try_advance(k, pos);
    try_advance(k, to);
    if (outstanding == 0) done();
  }
};

}  // namespace

void run_step_plans(const std::shared_ptr<CollectiveRun>& run, std::vector<StepPlan> plans,
                    std::function<void()> done) {
  auto ex = std::make_shared<StepExecutor>();
  ex->run = run;
  ex->done = std::move(done);
  for (auto& plan : plans) {
    const std::size_t n = plan.ranks.size();
    ex->outstanding += n * static_cast<std::size_t>(plan.steps);
    PlanState st{std::move(plan), std::vector<int>(n, 0), std::vector<int>(n, 0), std::vector<int>(n, 0), {}};
    st.received.assign(n * static_cast<std::size_t>(st.plan.steps), 0);
    ex->plans.push_back(std::move(st));
  }
  if (ex->outstanding == 0) {
    ex->done();
    return;
  }
  for (std::size_t k = 0; k < ex->plans.size(); ++k)
    for (int pos = 0; pos < static_cast<int>(ex->plans[k].plan.ranks.size()); ++pos) ex->try_advance(k, pos);
}

}  // namespace spsim::sim
