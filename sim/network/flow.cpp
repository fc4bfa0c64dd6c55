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
  const Route& route = options.route != nullptr ? *options.route : cluster_.route(src, dst);
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
  f.inline_links = 0;
  if (route.links.size() <= kInlineLinks) {
    std::copy(route.links.begin(), route.links.end(), f.link_ids.begin());
    f.inline_links = static_cast<std::uint8_t>(route.links.size());
  }
  f.remaining = wire;
  f.done_touches = options.done_touches;
  f.done = std::move(done);
  f.start = engine_.now() + latency;
  // Links no flow is on or about to join: the flow goes onto them now, priced as alone from its start
  // (its route's least capacity), so it costs one event, its end, instead of a start and an end. A
  // flow that comes onto one of them before this one's end resolves it first (start_flow), which
  // gives what the start event would have: most of a large replay's ring messages are never met.
  const auto links = links_of(f);
  if (std::all_of(links.begin(), links.end(),
                  [this](LinkId l) { return link_flows_[static_cast<std::size_t>(l)].empty(); })) {
    for (LinkId l : links) link_flows_[static_cast<std::size_t>(l)].push_back(slot);
    f.presumed_alone = true;
    f.active = true;
    ++active_;
    price_alone(slot, f.start);
    return;
  }
  schedule_start(slot);
}

void FlowNetwork::schedule_start(std::uint32_t slot) {
  engine_.schedule_at(flows_[slot].start, [this, slot] { start_flow(slot); }, {&touch_flow, this, slot});
}

void FlowNetwork::schedule_end(std::uint32_t slot, Time at) {
  Flow& f = flows_[slot];
  f.completion = engine_.is_pending(f.completion)
                     ? engine_.reschedule(f.completion, at)
                     : engine_.schedule_at(at, [this, slot] { complete(slot); }, {&touch_flow, this, slot});
}

void FlowNetwork::price_alone(std::uint32_t slot, Time from) {
  Flow& f = flows_[slot];
  f.rate = std::numeric_limits<double>::infinity();
  for (LinkId l : links_of(f)) f.rate = std::min(f.rate, capacity_[static_cast<std::size_t>(l)]);
  f.updated = from;
  ++stats_.rate_changes;
  schedule_end(slot, from + Time::from_seconds(f.remaining / f.rate));
}

void FlowNetwork::resolve(std::uint32_t slot) {
  Flow& f = flows_[slot];
  f.presumed_alone = false;
  if (f.start <= engine_.now()) return;  // started and alone so far: an active flow as it stands
  engine_.cancel(f.completion);
  f.completion = {};
  for (LinkId l : links_of(f)) link_flows_[static_cast<std::size_t>(l)].remove(slot);
  f.active = false;
  --active_;
  --stats_.rate_changes;  // its start will price it
  schedule_start(slot);
}

void FlowNetwork::touch_flow(const void* owner, std::uint32_t slot, int stage) {
  const auto& net = *static_cast<const FlowNetwork*>(owner);
  const Flow& f = net.flows_[slot];
  if (stage == 0) {
    prefetch_lines(&f, sizeof f);
    return;
  }
  for (std::uint8_t i = 0; i < f.inline_links; ++i)
    __builtin_prefetch(&net.link_flows_[static_cast<std::size_t>(f.link_ids[i])]);
  if (f.done_touches.touch != nullptr) f.done_touches.touch(f.done_touches.owner, f.done_touches.index, 0);
}

void FlowNetwork::LinkFlowList::push_back(std::uint32_t slot) {
  if (n_ == cap_) {
    auto* grown = new std::uint32_t[2 * cap_];
    std::copy(begin(), end(), grown);
    if (cap_ > kInline) delete[] heap_;
    heap_ = grown;
    cap_ *= 2;
  }
  data()[n_++] = slot;
}

void FlowNetwork::LinkFlowList::remove(std::uint32_t slot) {
  std::uint32_t* d = data();
  for (std::uint32_t i = 0; i < n_; ++i)
    if (d[i] == slot) {
      d[i] = d[--n_];
      return;
    }
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
  for (LinkId l : links_of(f)) {  // a flow presumed alone is the only one on each of its links
    const auto& on = link_flows_[static_cast<std::size_t>(l)];
    if (on.size() == 1 && flows_[on.front()].presumed_alone) resolve(on.front());
  }
  f.rate = 0;  // forces a schedule in recompute()
  f.updated = engine_.now();
  f.active = true;
  ++active_;
  bool alone = true;
  for (LinkId l : links_of(f)) {
    auto& on = link_flows_[static_cast<std::size_t>(l)];
    on.push_back(slot);
    alone = alone && on.size() == 1;
  }
  if (!alone) {
    defer_recompute(links_of(f));
    return;
  }
  // Alone on every link (a ring step's message, most of a large replay's flows): no other flow's rate
  // changes, and the deferred re-solve would give this one its route's least capacity. So it gets
  // that now, without the re-solve's event. A flow that joins one of its links later in this instant
  // seeds a re-solve, which finds this one there and moves its end, as it would have.
  price_alone(slot, engine_.now());
}

void FlowNetwork::defer_recompute(std::span<const LinkId> links) {
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
  f.presumed_alone = false;
  f.completion = {};
  --active_;
  const std::span<const LinkId> links = links_of(f);
  for (LinkId l : links) link_flows_[static_cast<std::size_t>(l)].remove(slot);
  Done done = std::move(f.done);
  free_slots_.push_back(slot);
  // The freed bandwidth goes to the flows that shared links with this one; a flow that had its links
  // to itself leaves nothing to re-solve (a recompute seeded there would find no flow).
  if (std::any_of(links.begin(), links.end(),
                  [this](LinkId l) { return !link_flows_[static_cast<std::size_t>(l)].empty(); }))
    defer_recompute(links);
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
      for (LinkId l : links_of(flows_[s]))
        if (link_mark_[static_cast<std::size_t>(l)] != epoch_) {
          link_mark_[static_cast<std::size_t>(l)] = epoch_;
          comp_links_.push_back(l);
        }
    }
}

// Max-min fair rates of the collected flows that share links with another route (general_slot_) into
// rates_[i]. The solver sees those flows and their links in collection order, so it breaks ties as it
// did when it was given the whole collection: the flows left out are components of their own, and
// progressive filling on disjoint components is filling on each.
void FlowNetwork::solve_general() {
  comp_capacity_.clear();
  for (LinkId l : comp_links_) {
    const auto& on = link_flows_[static_cast<std::size_t>(l)];
    if (on.empty() || !general_slot_[on.front()]) continue;  // a link's flows are all of one component
    local_index_[static_cast<std::size_t>(l)] = static_cast<int>(comp_capacity_.size());
    comp_capacity_.push_back(capacity_[static_cast<std::size_t>(l)]);
  }
  offsets_.assign(1, 0);
  local_links_.clear();
  for (std::uint32_t s : comp_flows_) {
    if (!general_slot_[s]) continue;
    for (LinkId l : links_of(flows_[s])) local_links_.push_back(local_index_[static_cast<std::size_t>(l)]);
    offsets_.push_back(static_cast<int>(local_links_.size()));
  }
  solver_.solve(comp_capacity_, offsets_, local_links_, general_rates_);
  std::size_t k = 0;
  for (std::size_t i = 0; i < comp_flows_.size(); ++i)
    if (general_slot_[comp_flows_[i]]) rates_[i] = general_rates_[k++];
}

void FlowNetwork::recompute(const std::vector<LinkId>& seeds) {
  collect_component(seeds);
  if (comp_flows_.empty()) return;
  // The flows that start or end in one instant may touch several components. A flow whose links carry
  // only flows of its own route (one alone, or a rank's messages to one peer) is in a component of k
  // such flows, and each gets the least of the route's capacities over k: what progressive filling
  // gives them, to the bit (the first of their links it freezes has the least capacity / k, and it
  // freezes all k there). The others go to the solver.
  general_slot_.resize(flows_.size());
  rates_.resize(comp_flows_.size());
  bool any_general = false;
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const std::uint32_t slot = comp_flows_[i];
    const std::vector<LinkId>* route = flows_[slot].links;
    double rate = std::numeric_limits<double>::infinity();
    bool alone = true;
    for (LinkId l : links_of(flows_[slot])) {
      const auto& on = link_flows_[static_cast<std::size_t>(l)];
      for (std::uint32_t other : on) alone = alone && flows_[other].links == route;
      rate = std::min(rate, capacity_[static_cast<std::size_t>(l)] / static_cast<double>(on.size()));
    }
    general_slot_[slot] = !alone;
    any_general = any_general || !alone;
    rates_[i] = rate;
  }
  if (any_general) solve_general();
  const Time now = engine_.now();
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    const std::uint32_t slot = comp_flows_[i];
    Flow& f = flows_[slot];
    if (rates_[i] == f.rate) continue;  // its scheduled completion still holds
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated).seconds());
    f.updated = now;
    f.rate = rates_[i];
    ++stats_.rate_changes;
    schedule_end(slot, now + Time::from_seconds(f.remaining / f.rate));
  }
}

}  // namespace spsim::sim
