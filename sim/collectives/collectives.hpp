// Collectives: the simulator's collective-communication API (what the replay engine calls).
//
//   Engine engine;
//   Cluster cluster(preset_cluster("dgx-h100", 2));
//   auto network = make_network(NetworkMode::flow, engine, cluster);
//   Collectives coll(*network);
//   CollectiveCall call{.kind = CommKind::all_reduce, .ranks = cluster.gpus(), .bytes = 1 << 30};
//   coll.start(call, [](const CollectiveResult& r) { /* r.finish, r.bytes_sent[rank] */ });
//   engine.run();
//
// A call is expanded into the point-to-point transfers of its algorithm (ring, tree, ...) with their
// dependencies and runs on the network together with whatever else is in flight, so concurrent
// collectives contend for links. Uncontended, the algorithms reproduce their α-β closed forms
// (tests/sim/collectives_closed_form_test.cpp), with α = protocol step latency + route latency and
// β = 1 / (protocol efficiency × bandwidth).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/algorithm.hpp"
#include "sim/collectives/call.hpp"
#include "sim/network/network.hpp"

namespace spsim::sim {

class Collectives {
 public:
  using Done = std::function<void(const CollectiveResult&)>;

  // Protocol constants come from the cluster's tuning (config.tuning) unless given.
  explicit Collectives(Network& network);
  Collectives(Network& network, ProtocolTable protocols);
  ~Collectives();

  // Starts `call` at engine.now(); `done` runs on the engine when every transfer has arrived.
  // Throws InputError (where = "algorithm", "protocol" or "ranks") naming the bad value and the
  // valid choices: unknown names, an algorithm that cannot run this kind or group (e.g. nvls
  // without an NVLS switch, halving_doubling on a non-power-of-two group).
  void start(const CollectiveCall& call, Done done);

  // What start() would run. For "auto": the (algorithm, protocol) with the least predicted time
  // among the tuner's candidates (NCCL's set: ring, tree across nodes, nvls, and for all_to_all
  // pairwise/direct), as NCCL's tuner does; explicit names are validated and kept.
  [[nodiscard]] CollectiveChoice choose(const CollectiveCall& call) const;

  // A point-to-point message (replay's send/recv pairs) with `protocol`'s per-step costs, or the
  // cluster's measured sendrecv fit when it has one (sim/collectives/fitted.hpp).
  void send(DeviceId src, DeviceId dst, double bytes, Protocol protocol, Network::Done done);
  // What a message from src to dst needs of the cluster, looked up once by a caller that sends along
  // the same pair again and again (a replayed rank's ring passes): at thousands of ranks each lookup
  // is a few waits for memory. The route is the cluster's, which outlives this object.
  struct SendPath {
    const Route* route = nullptr;
    bool multi_node = false;  // src and dst on different nodes
  };
  [[nodiscard]] SendPath send_path(DeviceId src, DeviceId dst) const;
  // send() along a path from send_path(src, dst).
  // `touches`: the state `done` works on (TransferOptions::done_touches).
  void send(const SendPath& path, DeviceId src, DeviceId dst, double bytes, Protocol protocol,
            Network::Done done, EventTouches touches = {});
  // The uncontended time of that message in seconds (the closed forms' ring pass): protocol base and
  // step latency of the route's link class + route latency + bytes / (efficiency × bottleneck
  // bandwidth); 0 to oneself. (A measured sendrecv fit is not consulted.)
  [[nodiscard]] double send_estimate_s(DeviceId src, DeviceId dst, double bytes, Protocol protocol) const;

  [[nodiscard]] const AlgorithmRegistry& registry() const { return registry_; }
  [[nodiscard]] const ProtocolTable& protocols() const { return protocols_; }
  [[nodiscard]] Network& network() { return network_; }

  // start() for one call the caller knows runs alone: nothing else is on the network now
  // (network().stats().in_flight() == 0) and nothing will start before `done` runs (simulate_collective;
  // the replay's collective of every rank, whose comm streams it holds). Node-symmetric algorithms
  // may then simulate one node's share of it (CollectiveRun::can_fold_nodes), exactly.
  void start_alone(const CollectiveCall& call, Done done) { start(call, std::move(done), true); }
  // Every transfer of every call is simulated, folded or not (the tests' reference).
  void never_fold() { may_fold_ = false; }

 private:
  friend class CollectiveRun;
  void start(const CollectiveCall& call, Done done, bool alone);
  Network& network_;
  bool may_fold_ = true;
  ProtocolTable protocols_;
  AlgorithmRegistry registry_;
};

// Runs `call` alone on a fresh engine and network of `cluster` and returns its result. With
// `fold_nodes` (the default) a ring across three or more identical nodes simulates node 0's share
// only (CollectiveRun::can_fold_nodes); false runs every transfer (the tests compare the two).
[[nodiscard]] CollectiveResult simulate_collective(const Cluster& cluster, NetworkMode mode,
                                                   const CollectiveCall& call, bool fold_nodes = true);

}  // namespace spsim::sim
