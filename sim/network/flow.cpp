// FlowNetwork: incremental max-min fair sharing on the affected connected component.
#include "sim/network/flow.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace spsim::sim {

FlowNetwork::FlowNetwork(Engine& engine, const Cluster& cluster)
    : engine_(engine),
      cluster_(cluster),
      link_flows_(cluster.num_links()),
      capacity_(cluster.num_links()),
      link_mark_(cluster.num_links(), 0),
      local_index_(cluster.num_links(), -1) {
  for (std::size_t l = 0; l < capacity_.size(); ++l)
    capacity_[l] = cluster.link(static_cast<LinkId>(l)).capacity_Bps;
}

void FlowNetwork::transfer(DeviceId src, DeviceId dst, double bytes, Done done,
                           const TransferOptions& options) {
  ++stats_.transfers;
  const Route& route = cluster_.route(src, dst);
  const double wire = bytes / options.efficiency;
  const Time latency = route.latency + options.extra_latency;
  if (route.links.empty() || wire <= 0) {
    engine_.schedule_after(latency, [this, done = std::move(done)] {
      ++stats_.arrived;
      done();
    });
    return;
  }
  // The flow's slot holds `done` from now on, so the latency event carries only the slot's index
  // (and needs no allocation of its own).
  const std::uint32_t slot = new_slot();
  Flow& f = flows_[slot];
  f.links = &route.links;
  f.remaining = wire;
  f.done = std::move(done);
  engine_.schedule_after(latency, [this, slot] { start_flow(slot); });
}

std::uint32_t FlowNetwork::new_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  flows_.emplace_back();
  flow_mark_.push_back(0);
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void FlowNetwork::start_flow(std::uint32_t slot) {
  Flow& f = flows_[slot];
  f.rate = 0;  // forces a schedule in recompute()
  f.updated = engine_.now();
  f.active = true;
  ++active_;
  for (LinkId l : *f.links) link_flows_[static_cast<std::size_t>(l)].push_back(slot);
  defer_recompute(*f.links);
}

void FlowNetwork::defer_recompute(const std::vector<LinkId>& links) {
  dirty_links_.insert(dirty_links_.end(), links.begin(), links.end());
  if (recompute_pending_) return;
  recompute_pending_ = true;
  // At the same time, after every event already scheduled for it (the engine runs ties in order).
  engine_.schedule_after(Time{}, [this] {
    recompute_pending_ = false;
    seeds_.swap(dirty_links_);
    dirty_links_.clear();
    recompute(seeds_);
  });
}

void FlowNetwork::complete(std::uint32_t slot) {
  Flow& f = flows_[slot];
  f.active = false;
  f.completion = {};
  --active_;
  for (LinkId l : *f.links) {
    auto& list = link_flows_[static_cast<std::size_t>(l)];
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i] == slot) {
        list[i] = list.back();
        list.pop_back();
        break;
      }
  }
  Done done = std::move(f.done);
  free_slots_.push_back(slot);
  // The freed bandwidth goes to the flows that shared links with this one; a flow that had its links
  // to itself leaves nothing to re-solve (a recompute seeded there would find no flow).
  if (std::any_of(f.links->begin(), f.links->end(),
                  [this](LinkId l) { return !link_flows_[static_cast<std::size_t>(l)].empty(); }))
    defer_recompute(*f.links);
  ++stats_.arrived;
  done();
}

// Breadth-first over links -> flows -> links from the seeds.
void FlowNetwork::collect_component(const std::vector<LinkId>& seeds) {
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  for (LinkId l : seeds)
    if (link_mark_[static_cast<std::size_t>(l)] != epoch_) {
      link_mark_[static_cast<std::size_t>(l)] = epoch_;
      comp_links_.push_back(l);
    }
  for (std::size_t i = 0; i < comp_links_.size(); ++i)
    for (std::uint32_t s : link_flows_[static_cast<std::size_t>(comp_links_[i])]) {
      if (flow_mark_[s] == epoch_) continue;
      flow_mark_[s] = epoch_;
      comp_flows_.push_back(s);
      for (LinkId l : *flows_[s].links)
        if (link_mark_[static_cast<std::size_t>(l)] != epoch_) {
          link_mark_[static_cast<std::size_t>(l)] = epoch_;
          comp_links_.push_back(l);
        }
    }
}

// Max-min fair rates of the collected component's flows into rates_.
void FlowNetwork::solve_component() {
  comp_capacity_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    local_index_[static_cast<std::size_t>(comp_links_[i])] = static_cast<int>(i);
    comp_capacity_.push_back(capacity_[static_cast<std::size_t>(comp_links_[i])]);
  }
  offsets_.assign(1, 0);
  local_links_.clear();
  for (std::uint32_t s : comp_flows_) {
    for (LinkId l : *flows_[s].links) local_links_.push_back(local_index_[static_cast<std::size_t>(l)]);
    offsets_.push_back(static_cast<int>(local_links_.size()));
  }
  solver_.solve(comp_capacity_, offsets_, local_links_, rates_);
}

void FlowNetwork::recompute(const std::vector<LinkId>& seeds) {
  collect_component(seeds);
  if (comp_flows_.empty()) return;
  if (comp_flows_.size() == 1) {
    // A flow alone on its links gets the least of their capacities: what progressive filling gives
    // it, to the bit (its first share is that capacity over one flow).
    double rate = std::numeric_limits<double>::infinity();
    for (LinkId l : *flows_[comp_flows_[0]].links) rate = std::min(rate, capacity_[static_cast<std::size_t>(l)]);
    rates_.assign(1, rate);
  } else {
    solve_component();
  }
  const Time now = engine_.now();
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const std::uint32_t slot = comp_flows_[i];
    Flow& f = flows_[slot];
    if (rates_[i] == f.rate) continue;  // its scheduled completion still holds
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
    f.updated = now;
    f.rate = rates_[i];
    ++stats_.rate_changes;
    const Time at = now + Time::from_seconds(f.remaining / f.rate);
    f.completion = engine_.is_pending(f.completion) ? engine_.reschedule(f.completion, at)
                                                    : engine_.schedule_at(at, [this, slot] { complete(slot); });
  }
}

}  // namespace spsim::sim
