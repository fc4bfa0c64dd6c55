// Tests of the flow-level network (max-min sharing over time) and the analytical model, on small
// explicit topologies with hand-derived completion times.
#include "sim/network/network.hpp"

#include <doctest/doctest.h>

#include <map>

#include "tests/sim/topologies.hpp"

using namespace spsim::sim;

namespace {

struct Fixture {
  explicit Fixture(int p, double bw = 10e9, Time hop = Time{}, NetworkMode mode = NetworkMode::flow)
      : cluster(testing::star_cluster(p, bw, hop)), network(make_network(mode, engine, cluster)) {}
  DeviceId gpu(int i) const { return cluster.gpus()[static_cast<std::size_t>(i)]; }
  // Starts a transfer at `at` and records its arrival time under `name`.
  void send_at(Time at, int from, int to, double bytes, const std::string& name, TransferOptions opt = {}) {
    engine.schedule_at(at, [=, this] {
      network->transfer(
          gpu(from), gpu(to), bytes, [this, name] { arrived[name] = engine.now(); }, opt);
    });
  }
  Engine engine;
  Cluster cluster;
  std::unique_ptr<Network> network;
  std::map<std::string, Time> arrived;
};

constexpr double GB = 1e9;

}  // namespace

TEST_CASE("a lone flow takes route latency plus bytes over bandwidth") {
  // 2 hops of 1 us each, 10 GB/s: 1 GB arrives at 2 us + 0.1 s.
  Fixture f(2, 10 * GB, Time::from_us(1));
  f.send_at(Time{}, 0, 1, 1 * GB, "a");
  f.engine.run();
  CHECK(f.arrived["a"] == Time::from_us(2) + Time::from_seconds(0.1));
}

TEST_CASE("a flow posted onto free links costs one event, its end, until another flow meets it") {
  // The events: the test's send and the flow's end (priced as alone from its start when posted).
  Fixture f(3, 10 * GB, Time::from_us(1));
  f.send_at(Time{}, 0, 1, 1 * GB, "a");
  f.engine.run();
  CHECK(f.engine.events_processed() == 2);
  CHECK(f.arrived["a"] == Time::from_us(2) + Time::from_seconds(0.1));

  // b finds a on g2's downlink when posted, so it starts as flows do; its start meets a (started in
  // the same instant) and needs a re-solve, which moves a's end; the first to end leaves the other on
  // the shared downlink, which needs another: 2 sends, b's start, 2 re-solves, 2 ends.
  Fixture g(3, 10 * GB, Time::from_us(1));
  g.send_at(Time{}, 0, 2, 1 * GB, "a");
  g.send_at(Time{}, 1, 2, 1 * GB, "b");
  g.engine.run();
  CHECK(g.engine.events_processed() == 7);
  CHECK(g.arrived["a"] == Time::from_us(2) + Time::from_seconds(0.2));
  CHECK(g.arrived["b"] == Time::from_us(2) + Time::from_seconds(0.2));
}

TEST_CASE("a flow that starts during a posted flow's latency has the links to itself until then") {
  // a (1 GB) is posted at 0 with 0.1 s of latency, onto free links: priced as alone from 0.1 s. b (2 GB,
  // no latency) starts at 0.05 s on g0's uplink, which a will share: a leaves its links until 0.1 s.
  // b alone at 10 GB/s moves 0.5 GB by 0.1 s; then 5 GB/s each: a's 1 GB ends at 0.3 s, when b has
  // 0.5 GB left, alone again at 10 GB/s: b ends at 0.35 s.
  Fixture f(3);
  f.send_at(Time{}, 0, 1, 1 * GB, "a", TransferOptions{.extra_latency = Time::from_seconds(0.1)});
  f.send_at(Time::from_seconds(0.05), 0, 2, 2 * GB, "b");
  f.engine.run();
  CHECK(f.arrived["a"] == Time::from_seconds(0.3));
  CHECK(f.arrived["b"] == Time::from_seconds(0.35));
  CHECK(f.network->active_flows() == 0);
}

TEST_CASE("two flows into one GPU share its downlink") {
  // g0 -> g2 and g1 -> g2 both cross sw -> g2 (10 GB/s): 5 GB/s each, 1 GB each takes 0.2 s.
  Fixture f(3);
  f.send_at(Time{}, 0, 2, 1 * GB, "a");
  f.send_at(Time{}, 1, 2, 1 * GB, "b");
  f.engine.run();
  CHECK(f.arrived["a"] == Time::from_seconds(0.2));
  CHECK(f.arrived["b"] == Time::from_seconds(0.2));
}

TEST_CASE("a finishing flow frees bandwidth for the others") {
  // 1 GB and 3 GB share g0's uplink (10 GB/s) to different receivers: 5 GB/s each, so the 1 GB
  // flow ends at 0.2 s; the 3 GB flow has 3 - 1 = 2 GB left, now alone at 10 GB/s: +0.2 s = 0.4 s.
  Fixture f(3);
  f.send_at(Time{}, 0, 1, 1 * GB, "small");
  f.send_at(Time{}, 0, 2, 3 * GB, "big");
  f.engine.run();
  CHECK(f.arrived["small"] == Time::from_seconds(0.2));
  CHECK(f.arrived["big"] == Time::from_seconds(0.4));
}

TEST_CASE("a flow joining later slows the running one from then on") {
  // A: 2 GB from t=0 alone at 10 GB/s -> 1 GB left at t=0.1 s, when B (1 GB, same uplink) joins.
  // Both at 5 GB/s: each needs 0.2 s more -> both end at 0.3 s.
  Fixture f(3);
  f.send_at(Time{}, 0, 1, 2 * GB, "a");
  f.send_at(Time::from_seconds(0.1), 0, 2, 1 * GB, "b");
  f.engine.run();
  CHECK(f.arrived["a"] == Time::from_seconds(0.3));
  CHECK(f.arrived["b"] == Time::from_seconds(0.3));
}

TEST_CASE("flows with different bottlenecks on a topology") {
  // Links are 10 GB/s. Three flows leave g0 (to g1, g2, g3) and g4 sends to g1.
  // Fair shares: g0's uplink 10/3 = 3.33 (3 flows), sw->g1 10/2 = 5, others 10 -> g0's uplink is
  // the bottleneck: its three flows get 3.33. sw->g1 has 10 - 3.33 = 6.67 left for g4->g1.
  // 1 GB each: g4->g1 ends at 1 / 6.67 = 0.15 s. The g0 flows then have 0.5 GB left and stay
  // bottlenecked on g0's uplink at 3.33, so they end at 0.15 + 0.15 = 0.3 s.
  Fixture f(5);
  for (int d = 1; d <= 3; ++d) f.send_at(Time{}, 0, d, 1 * GB, "from0to" + std::to_string(d));
  f.send_at(Time{}, 4, 1, 1 * GB, "from4");
  f.engine.run();
  CHECK(f.arrived["from4"] == Time::from_seconds(0.15));
  for (int d = 1; d <= 3; ++d) CHECK(f.arrived["from0to" + std::to_string(d)] == Time::from_seconds(0.3));
}

TEST_CASE("efficiency and extra latency of a transfer") {
  // 1 GB at efficiency 0.5 on 10 GB/s: 0.2 s, plus 3 us extra latency.
  Fixture f(2);
  f.send_at(Time{}, 0, 1, 1 * GB, "a", TransferOptions{Time::from_us(3), 0.5});
  f.engine.run();
  CHECK(f.arrived["a"] == Time::from_us(3) + Time::from_seconds(0.2));
}

TEST_CASE("zero bytes and same-device transfers cost only latency") {
  Fixture f(2, 10 * GB, Time::from_us(1));
  f.send_at(Time{}, 0, 1, 0, "zero");
  f.send_at(Time{}, 0, 0, 1 * GB, "self", TransferOptions{Time::from_us(5), 1});
  f.engine.run();
  CHECK(f.arrived["zero"] == Time::from_us(2));
  CHECK(f.arrived["self"] == Time::from_us(5));
}

TEST_CASE("the analytical model ignores contention and matches the flow model alone") {
  // Two flows into g2: the flow model shares (0.2 s), the analytical one does not (0.1 s each).
  Fixture a(3, 10 * GB, Time::from_us(1), NetworkMode::analytical);
  a.send_at(Time{}, 0, 2, 1 * GB, "a");
  a.send_at(Time{}, 1, 2, 1 * GB, "b");
  a.engine.run();
  CHECK(a.arrived["a"] == Time::from_us(2) + Time::from_seconds(0.1));
  CHECK(a.arrived["b"] == Time::from_us(2) + Time::from_seconds(0.1));
  Fixture f(3, 10 * GB, Time::from_us(1));
  f.send_at(Time{}, 0, 2, 1 * GB, "a");
  f.engine.run();
  CHECK(f.arrived["a"] == a.arrived["a"]);
}

TEST_CASE("many flows arriving over time leave no active flow behind") {
  Fixture f(8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j)
        f.send_at(Time::ps(1000 * ((i * 7 + j) % 5)), i, j, 1e6 * (1 + (i + j) % 3),
                  std::to_string(i * 8 + j));
  f.engine.run();
  CHECK(f.arrived.size() == 56);
  CHECK(f.network->active_flows() == 0);
  // Capacity bound: g0's uplink (10 GB/s) carried all of g0's bytes, so its last flow cannot
  // arrive before (their sum) / 10 GB/s.
  Time last_from0{};
  double bytes_from0 = 0;
  for (int j = 1; j < 8; ++j) {
    last_from0 = std::max(last_from0, f.arrived[std::to_string(j)]);
    bytes_from0 += 1e6 * (1 + j % 3);
  }
  CHECK(last_from0 >= Time::from_seconds(bytes_from0 / 10e9));
}

TEST_CASE("on a rail-optimized fabric PXN keeps cross-rail messages off an oversubscribed spine") {
  // Two nodes on one group's rail leaves, 4:1 oversubscribed: a leaf's uplinks carry its 2 NIC ports'
  // line rate / 4, half a NIC. GPU c of node 0 sends 1 GB to GPU c+1 of node 1, all eight at once.
  // With PXN each message crosses NVLink to GPU c+1 of node 0 and leaves on rail c+1: no two share a
  // link, and each moves at its NIC's rate (NVLink and PCIe are faster). Without, each leaves on rail c
  // and crosses the spine, alone on leaf c's uplinks: half a NIC's rate.
  for (const bool pxn : {true, false}) {
    CAPTURE(pxn);
    ClusterConfig config = testing::preset_cluster("dgx-h100", 2);
    config.inter_node.fabric.kind = FabricKind::rail_optimized;
    config.inter_node.fabric.nodes_per_leaf = 2;
    config.inter_node.fabric.oversubscription = 4;
    config.inter_node.fabric.pxn = pxn;
    const Cluster cluster(config);
    Engine engine;
    const auto network = make_network(NetworkMode::flow, engine, cluster);
    auto capacity = [&](const char* from, const char* to) {
      return cluster.link(cluster.route(*cluster.find_device(from), *cluster.find_device(to)).links.at(0))
          .capacity_Bps;
    };
    const double nic = capacity("n0.nic0", "leaf0.rail0"), uplink = capacity("leaf0.rail0", "spine");
    CHECK(uplink == doctest::Approx(nic / 2).epsilon(1e-12));
    const auto& gpus = cluster.gpus();
    std::vector<Time> arrived(8), expected(8);
    for (std::size_t c = 0; c < 8; ++c) {
      const DeviceId src = gpus[c], dst = gpus[8 + (c + 1) % 8];
      const Route& route = cluster.route(src, dst);
      CHECK(route.links.size() == 6);
      expected[c] = route.latency + Time::from_seconds(1 * GB / (pxn ? nic : uplink));
      network->transfer(src, dst, 1 * GB, [&, c] { arrived[c] = engine.now(); });
    }
    engine.run();
    CHECK(arrived == expected);
  }
}

TEST_CASE("flows on one route split it evenly, beside flows on shared links solved in the same instant") {
  // All start at 0 on a 10 GB/s star. a1 and a2 both go g0 -> g1: 5 GB/s each, 1 GB in 0.2 s. b (3 GB,
  // g2 -> g3) and c (1 GB, g2 -> g0) share g2's uplink: 5 GB/s each; c ends at 0.2 s, then b has
  // 3 - 1 = 2 GB alone at 10 GB/s: 0.4 s. The first pair is priced without the solver, the second by
  // it, in one recompute.
  Fixture f(4);
  f.send_at(Time{}, 0, 1, 1 * GB, "a1");
  f.send_at(Time{}, 2, 3, 3 * GB, "b");
  f.send_at(Time{}, 0, 1, 1 * GB, "a2");
  f.send_at(Time{}, 2, 0, 1 * GB, "c");
  f.engine.run();
  CHECK(f.arrived["a1"] == Time::from_seconds(0.2));
  CHECK(f.arrived["a2"] == Time::from_seconds(0.2));
  CHECK(f.arrived["c"] == Time::from_seconds(0.2));
  CHECK(f.arrived["b"] == Time::from_seconds(0.4));
}
