// Algorithm: the interface one collective algorithm implements (one per file), its registry, and
// CollectiveRun, the handle through which a running algorithm moves bytes.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/collectives/call.hpp"
#include "sim/collectives/protocol.hpp"
#include "sim/network/network.hpp"

namespace spsim::sim {

class Collectives;

// How a group of ranks sits on the cluster, for algorithms and their cost estimates.
struct GroupShape {
  int size = 0;
  std::vector<std::vector<int>> node_members;  // ranks per node (nodes in order of first rank), rank order
  int min_per_node = 0;
  int max_per_node = 0;
  // One hop inside a node and one across nodes (first such pair of the group; presets are uniform).
  Time intra_latency{}, inter_latency{};
  // The first link of the intra-node route: GPU -> its node's switch (CollNet's NVLink streams).
  Time intra_switch_latency{};
  double intra_Bps = 0, inter_Bps = 0;
  LinkClass intra_class = LinkClass::nvlink, inter_class = LinkClass::network;
  // Rings run in parallel so that every NIC of a node carries one ring: max_per_node when the
  // group spans several nodes, else 1 (NCCL's channels, one per rail).
  int channels = 1;
  std::optional<DeviceId> nvls_switch;  // single-node group whose GPUs all attach to an NVLS switch
  std::vector<DeviceId>
      node_nvls_switches;   // multi-node group: each node's NVLS switch (empty unless all have one)
  Time nvls_hop_latency{};  // GPU -> its node's NVLS switch
  // Multi-node group on a fabric whose one switch reduces in the network (FabricConfig::sharp), and the
  // route latency GPU -> that switch.
  std::optional<DeviceId> sharp_switch;
  Time sharp_hop_latency{};
  // Every node holds the same local GPU indices in the same order (so rotating the nodes maps the
  // group onto itself; CollectiveRun::can_fold_nodes).
  bool uniform_nodes = false;
  // A group across leaves of a fat tree (inter_node.fabric): the effective rate of one leaf's uplinks
  // and the most ranks of the group under one leaf; 0 when one switch joins the group's nodes.
  double spine_Bps = 0;
  int leaf_ranks = 0;
  [[nodiscard]] int nodes() const { return static_cast<int>(node_members.size()); }
  // The group's bus-bandwidth bound: a GPU's NVLink port, and across nodes at most its node's NICs
  // shared by the channels (LL's llMaxBw cap is a fraction of it; protocol.hpp).
  [[nodiscard]] double busbw_bound_Bps() const {
    const double intra = max_per_node > 1 ? intra_Bps : 0;
    if (!multi_node()) return intra;
    const double inter = channels * inter_Bps;
    return intra > 0 ? std::min(intra, inter) : inter;
  }
  [[nodiscard]] bool multi_node() const { return nodes() > 1; }
};
[[nodiscard]] GroupShape make_group_shape(const Cluster& cluster, const std::vector<DeviceId>& ranks);

// One running collective. Algorithms receive it as a shared_ptr and keep it alive by capturing
// it in their continuations.
class CollectiveRun : public std::enable_shared_from_this<CollectiveRun> {
 public:
  CollectiveRun(Collectives& owner, CollectiveCall call, GroupShape shape, ProtocolCosts costs,
                std::string algorithm, Protocol protocol, std::function<void(const CollectiveResult&)> done,
                bool alone = false);

  [[nodiscard]] const CollectiveCall& call() const { return call_; }
  [[nodiscard]] const GroupShape& shape() const { return shape_; }
  [[nodiscard]] const ProtocolCosts& costs() const { return costs_; }
  [[nodiscard]] int size() const { return shape_.size; }
  [[nodiscard]] double bytes() const { return call_.bytes; }
  [[nodiscard]] DeviceId device(int rank) const { return call_.ranks[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] const Cluster& cluster() const;

  // Sends `bytes` from rank `from` to rank `to`: the protocol's step latency for the route's link
  // class is added and its efficiency applied; `then` runs when they have arrived.
  void transfer(int from, int to, double bytes, std::function<void()> then);
  // The same between a rank and a non-GPU device (NVLS: GPU <-> switch); rank is the GPU's rank,
  // `to_device` tells the direction.
  void transfer_device(int rank, DeviceId other, bool to_device, double bytes, std::function<void()> then);
  // Runs `sub` (same protocol, no tuning) as part of this call; its transfers count for this run.
  void start_sub(CollectiveCall sub, std::function<void()> then);
  // Runs `then` on the engine `delay` from now (a pipeline's remaining latency after its streams).
  void after(Time delay, std::function<void()> then);
  // The engine's current time.
  [[nodiscard]] Time now() const;
  // Whether an algorithm may simulate one node's share of the call and stand it for every node
  // (fold_nodes): the call runs alone on the network (simulate_collective, or a replayed collective
  // of every rank with nothing in flight; any call of the analytical model), spans three or more
  // nodes that hold the same local GPUs, on a preset cluster, whose nodes are identical and whose
  // NICs share one non-blocking fabric with one latency between any two nodes. Rotating the nodes
  // then maps the cluster, the group and a node-symmetric algorithm (ring) onto themselves, so
  // every node's transfers happen at the times of node 0's and the max-min rates are those of the
  // folded flow set: the result is the full simulation's at 1/nodes of the cost.
  [[nodiscard]] bool can_fold_nodes() const;
  // The algorithm runs node 0's positions only; transfers that leave node 0 go to node 1's
  // counterpart of the node-0 position they stand for (node 1's in-links stand for node 0's). At
  // finish() node 0's and node 1's per-rank results merge into node 0's and are copied to every node.
  void fold_nodes() { folded_ = true; }
  // The algorithm is complete: records the finish time and reports the result.
  void finish();
  // A measured call (sim/collectives/fitted.hpp), no transfers: every rank has sent
  // `bytes_per_rank` and finishes `delay` from now.
  void finish_after(Time delay, double bytes_per_rank);

 private:
  void record(int rank, double sent);
  Collectives& owner_;
  CollectiveCall call_;
  GroupShape shape_;
  ProtocolCosts costs_;
  CollectiveResult result_;
  std::unordered_map<DeviceId, int> rank_of_device_;  // for sub-collectives
  std::function<void(const CollectiveResult&)> done_;
  bool alone_ = false, folded_ = false;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  [[nodiscard]] virtual AlgorithmFamily family() const = 0;
  // Empty if it can run `call` on this group, else the reason (used in error messages).
  [[nodiscard]] virtual std::string unsupported(const CollectiveCall& call,
                                                const GroupShape& shape) const = 0;
  // Schedules the algorithm's transfers; must eventually call run->finish().
  virtual void run(const std::shared_ptr<CollectiveRun>& run) const = 0;
  // Predicted uncontended time in seconds: the tuner's model and the closed forms' collective time
  // (the one α-β formula of the algorithm; the header of each algorithm file says how).
  [[nodiscard]] virtual double estimate_s(const CollectiveCall& call, const GroupShape& shape,
                                          const ProtocolCosts& costs) const = 0;
};

struct AlgorithmInfo {
  std::string name;
  std::string description;
  std::vector<CommKind> kinds;
  // Whether "auto" considers it for this group (NCCL's set: ring, tree across nodes, nvls, p2p
  // all-to-all); empty = never (explicit use only).
  std::function<bool(const GroupShape&)> tuner_candidate;
  std::function<std::unique_ptr<Algorithm>()> make;
  std::vector<std::string> aliases;  // other names configs and --algo accept ("rhd")
};

// Name -> algorithm. A new algorithm plugs in by adding an AlgorithmInfo (see registry.cpp).
class AlgorithmRegistry {
 public:
  void add(AlgorithmInfo info);  // throws std::logic_error on a duplicate name
  // By name or alias; nullptr if unknown.
  [[nodiscard]] const AlgorithmInfo* find(std::string_view name) const;
  [[nodiscard]] const Algorithm& algorithm(std::string_view name) const;  // name must exist
  // Names in registration order, optionally only those supporting `kind`.
  [[nodiscard]] std::vector<std::string> names(std::optional<CommKind> kind = std::nullopt) const;

 private:
  std::vector<AlgorithmInfo> infos_;
  std::vector<std::unique_ptr<Algorithm>> algorithms_;
};

// Every algorithm in sim/collectives/.
[[nodiscard]] AlgorithmRegistry default_algorithms();

}  // namespace spsim::sim
