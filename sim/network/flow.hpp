// FlowNetwork: flow-level model with max-min fair sharing, recomputed per affected component.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "sim/network/max_min.hpp"
#include "sim/network/network.hpp"

namespace spsim::sim {

// SimGrid's flow-level model without its TCP correction factors: a transfer waits out its latency,
// then joins the set of active flows; link bandwidth is shared max-min fairly (max_min.hpp). When a
// flow starts or ends only the flows connected to it through shared links (its connected component
// in the flow-link graph) have their rates recomputed, once per instant: the flows that start or end
// at one picosecond (a ring step's, all together) are solved in one recompute after that instant's
// events, not one per flow. A flow's completion is rescheduled only if its rate changed, and the old
// event is cancelled (Engine::cancel), so the queue holds one completion per flow.
class FlowNetwork final : public Network {
 public:
  FlowNetwork(Engine& engine, const Cluster& cluster);
  void transfer(DeviceId src, DeviceId dst, double bytes, Done done, const TransferOptions& options) override;
  [[nodiscard]] std::size_t active_flows() const override { return active_; }
  [[nodiscard]] NetworkMode mode() const override { return NetworkMode::flow; }
  [[nodiscard]] const NetworkStats& stats() const override { return stats_; }
  [[nodiscard]] const Cluster& cluster() const override { return cluster_; }
  [[nodiscard]] Engine& engine() override { return engine_; }

 private:
  static constexpr std::size_t kInlineLinks = 8;
  struct Flow {
    const std::vector<LinkId>* links = nullptr;  // owned by the cluster's route cache
    double remaining = 0;                        // wire bytes left as of `updated`
    double rate = 0;                             // bytes per second
    Time updated{};
    Engine::EventId completion;  // replaced (the old one cancelled) whenever the rate changes
    Time start{};                // when its latency has passed and it joins its links
    bool active = false;
    // Put on its links when posted, as if started at `start` and alone until it ends (see
    // FlowNetwork::transfer); until another flow comes onto one of its links (resolve()), it is the only
    // flow on each of them.
    bool presumed_alone = false;
    // The route's links again, in the flow itself when they are few (most routes): a flow's start and
    // end, and the engine's prefetch of the link lists they touch (touch_flow), then read one object
    // rather than the flow, its route and the route's array, each a wait for memory at scale.
    std::uint8_t inline_links = 0;  // 0: more than kInlineLinks, in *links only
    std::array<LinkId, kInlineLinks> link_ids{};
    EventTouches done_touches{};  // TransferOptions::done_touches
    Done done;
  };
  [[nodiscard]] static std::span<const LinkId> links_of(const Flow& f) {
    return f.inline_links != 0 ? std::span<const LinkId>(f.link_ids.data(), f.inline_links)
                               : std::span<const LinkId>(*f.links);
  }
  // EventTouches::touch of a flow's start or end: the flow, then its links' flow lists and what its
  // `done` works on (TransferOptions::done_touches, stage 0).
  static void touch_flow(const void* owner, std::uint32_t slot, int stage);

  // The active flow slots on one link, in order of arrival but for removals (the last one takes the
  // removed one's place). A link carries a few flows at a time, so up to kInline of them sit in the
  // list itself: a flow's start and end then touch one cache line per link, not a list and its array.
  class LinkFlowList {
   public:
    LinkFlowList() = default;
    LinkFlowList(const LinkFlowList&) = delete;
    LinkFlowList& operator=(const LinkFlowList&) = delete;
    ~LinkFlowList() {
      if (cap_ > kInline) delete[] heap_;
    }
    [[nodiscard]] bool empty() const { return n_ == 0; }
    [[nodiscard]] std::size_t size() const { return n_; }
    [[nodiscard]] const std::uint32_t* begin() const { return cap_ > kInline ? heap_ : inline_; }
    [[nodiscard]] const std::uint32_t* end() const { return begin() + n_; }
    [[nodiscard]] std::uint32_t front() const { return *begin(); }
    void push_back(std::uint32_t slot);
    void remove(std::uint32_t slot);  // one that is on the list

   private:
    static constexpr std::uint32_t kInline = 6;
    [[nodiscard]] std::uint32_t* data() { return cap_ > kInline ? heap_ : inline_; }
    std::uint32_t n_ = 0, cap_ = kInline;
    union {
      std::uint32_t inline_[kInline];
      std::uint32_t* heap_;
    };
  };

  [[nodiscard]] std::uint32_t new_slot();  // an inactive flow slot, reused or new
  void start_flow(std::uint32_t slot);       // the slot's latency has passed: join the active flows
  // A flow presumed alone meets another on one of its links: if it has started, it is an active flow
  // like any (its rate and end as priced from its start); if not, it leaves its links and starts at its
  // time as flows do.
  void resolve(std::uint32_t slot);
  void schedule_start(std::uint32_t slot);         // at the flow's `start`
  void schedule_end(std::uint32_t slot, Time at);  // its completion, moved if one is pending
  // Its route's least capacity from `from` on (what max-min gives a flow alone on its links), and its end.
  void price_alone(std::uint32_t slot, Time from);
  void complete(std::uint32_t slot);
  void recompute(const std::vector<LinkId>& seeds);
  // Marks `links` for the recompute that runs once all events of this instant have: the flows that
  // start or end together (a ring step's) are solved once, not once per flow.
  void defer_recompute(std::span<const LinkId> links);
  void collect_component(const std::vector<LinkId>& seeds);
  void solve_general();

  Engine& engine_;
  const Cluster& cluster_;
  std::vector<LinkFlowList> link_flows_;  // active flow slots per link
  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t active_ = 0;
  NetworkStats stats_;
  // Scratch for component collection and solving (reused).
  std::vector<std::uint64_t> link_mark_, flow_mark_;
  std::uint64_t epoch_ = 0;
  std::vector<LinkId> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<int> local_index_;
  std::vector<double> comp_capacity_;
  std::vector<int> offsets_, local_links_;
  std::vector<double> rates_, general_rates_;
  std::vector<char> general_slot_;  // by flow slot, for the current recompute: solved by the solver
  MaxMinSolver solver_;
  std::vector<LinkId> dirty_links_, seeds_;  // seeds of the deferred recompute (and its copy)
  bool recompute_pending_ = false;
};

}  // namespace spsim::sim
