// Tests of the Collectives API: validation errors, the auto tuner, results and concurrency.
#include <doctest/doctest.h>

#include "analysis/config/cluster.hpp"
#include "runtime/core/error.hpp"
#include "sim/collectives/collectives.hpp"
#include "tests/sim/topologies.hpp"

using namespace spsim::sim;
using spsim::analysis::preset_cluster;

namespace {

std::string where_of(const Cluster& cluster, CollectiveCall call) {
  Engine engine;
  auto net = make_network(NetworkMode::flow, engine, cluster);
  Collectives coll(*net);
  try {
    coll.start(call, [](const CollectiveResult&) {});
  } catch (const spsim::InputError& e) {
    return e.where() + ": " + e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bad algorithm or protocol names are input errors that list the choices") {
  const Cluster a100(preset_cluster("dgx-a100"));
  const auto g = a100.gpus();
  auto call = [&](CommKind k, std::string algo) {
    return CollectiveCall{k, g, 1024, std::move(algo), std::nullopt, 1};
  };
  auto err = where_of(a100, call(CommKind::all_reduce, "bogus"));
  CHECK(err.rfind("algorithm:", 0) == 0);
  CHECK(err.find("ring, tree, nvls, nvls_tree, halving_doubling, hierarchical, collnet_direct, auto") != std::string::npos);
  CHECK(where_of(a100, call(CommKind::all_to_all, "ring")).find("does not implement all_to_all") !=
        std::string::npos);
  CHECK(where_of(a100, call(CommKind::all_reduce, "nvls")).find("NVLS") != std::string::npos);
  CHECK(where_of(a100, call(CommKind::all_reduce, "hierarchical")).find("single node") != std::string::npos);
  CHECK(where_of(a100, call(CommKind::all_reduce, "rhd")).empty());  // halving_doubling's alias
  const Cluster h100(preset_cluster("dgx-h100"));
  CHECK(where_of(h100, CollectiveCall{CommKind::all_reduce, h100.gpus(), 1024, "nvls", Protocol::ll, 1})
            .rfind("protocol:", 0) == 0);
  std::vector<DeviceId> three(g.begin(), g.begin() + 3);
  CHECK(where_of(a100, CollectiveCall{CommKind::all_reduce, three, 1024, "halving_doubling", std::nullopt, 1})
            .find("power-of-two") != std::string::npos);
  std::vector<DeviceId> dup{g[0], g[0]};
  CHECK(where_of(a100, CollectiveCall{CommKind::all_reduce, dup, 1024, "ring", std::nullopt, 1})
            .rfind("ranks:", 0) == 0);
  std::vector<DeviceId> not_gpu{g[0], 0};  // device 0 of a single-node preset is its NVSwitch
  CHECK(a100.device(0).kind == DeviceKind::nvswitch);
  CHECK(where_of(a100, CollectiveCall{CommKind::all_reduce, not_gpu, 1024, "ring", std::nullopt, 1})
            .rfind("ranks:", 0) == 0);
}

TEST_CASE("auto picks NVLS on H100 for large all-reduce, ring Simple on A100, LL for tiny messages") {
  const Cluster h100(preset_cluster("dgx-h100")), a100(preset_cluster("dgx-a100"));
  Engine e1, e2;
  auto n1 = make_network(NetworkMode::flow, e1, h100);
  auto n2 = make_network(NetworkMode::flow, e2, a100);
  Collectives c1(*n1), c2(*n2);
  const double gib = 1 << 30;
  CHECK(c1.choose({CommKind::all_reduce, h100.gpus(), gib, "auto", std::nullopt, 1}).algorithm == "nvls");
  const auto big = c2.choose({CommKind::all_reduce, a100.gpus(), gib, "auto", std::nullopt, 1});
  CHECK(big.algorithm == "ring");
  CHECK(big.protocol == Protocol::simple);
  // 1 KiB: LL's 0.6 us steps beat Simple's calibrated 9 us ones; bandwidth hardly matters.
  CHECK(c2.choose({CommKind::all_reduce, a100.gpus(), 1024, "auto", std::nullopt, 1}).protocol ==
        Protocol::ll);
  // Trees are NCCL's inter-node algorithm: never tuned inside one node.
  CHECK(c2.choose({CommKind::all_reduce, a100.gpus(), 1024, "auto", std::nullopt, 1}).algorithm == "ring");
}

TEST_CASE("the tuner's ring estimate equals the uncontended simulation") {
  // Estimate: base + S (step + route latency + n/(P eff B)); the simulation rounds each step's
  // transfer time to the picosecond separately, so they agree within S ps.
  const Cluster a100(preset_cluster("dgx-a100"));
  Engine e;
  auto net = make_network(NetworkMode::flow, e, a100);
  Collectives coll(*net);
  for (double n : {0.0, 1e3, 1e6, 1e9})
    for (Protocol proto : {Protocol::simple, Protocol::ll, Protocol::ll128}) {
      CAPTURE(n);
      CAPTURE(protocol_name(proto));
      const CollectiveCall call{CommKind::all_reduce, a100.gpus(), n, "ring", proto, 1};
      const auto predicted = coll.choose(call).predicted;
      const auto simulated = simulate_collective(a100, NetworkMode::flow, call).duration();
      CHECK(std::llabs((predicted - simulated).count_ps()) <= 14);
    }
}

TEST_CASE("results: per-rank finish times and bytes, one-rank groups, concurrent collectives contend") {
  const Cluster a100(preset_cluster("dgx-a100"));
  const auto g = a100.gpus();
  Engine engine;
  auto net = make_network(NetworkMode::flow, engine, a100);
  Collectives coll(*net);
  std::vector<CollectiveResult> results;
  auto keep = [&](const CollectiveResult& r) { results.push_back(r); };
  coll.start({CommKind::all_reduce, {g[0]}, 1e6, "auto", std::nullopt, 1}, keep);
  engine.run();
  REQUIRE(results.size() == 1);
  CHECK(results[0].duration() == Time{});
  // Alone, an all-gather of 1 GB on ranks 0-3 takes T; two of them on the same GPUs at once share
  // every port, so each takes about 2T (the latency part does not double).
  const std::vector<DeviceId> four(g.begin(), g.begin() + 4);
  const CollectiveCall ag{CommKind::all_gather, four, 1e9, "ring", Protocol::simple, 1};
  const Time alone = simulate_collective(a100, NetworkMode::flow, ag).duration();
  results.clear();
  coll.start(ag, keep);
  coll.start(ag, keep);
  engine.run();
  REQUIRE(results.size() == 2);
  for (const auto& r : results) {
    CHECK(r.duration().seconds() > 1.9 * alone.seconds());
    CHECK(r.duration().seconds() < 2.0 * alone.seconds());
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(r.rank_finish[i] <= r.finish);
      CHECK(r.rank_finish[i] > r.start);
      CHECK(r.bytes_sent[i] == doctest::Approx(3 * 1e9 / 4));
    }
  }
}

TEST_CASE("send() adds the protocol's base and step latency to a point-to-point transfer") {
  const Cluster a100(preset_cluster("dgx-a100"));
  const auto g = a100.gpus();
  Engine engine;
  auto net = make_network(NetworkMode::flow, engine, a100);
  Collectives coll(*net);
  Time arrived{};
  coll.send(g[0], g[1], 0, Protocol::simple, [&] { arrived = engine.now(); });
  engine.run();
  const auto& t = a100.config().tuning.protocols[static_cast<std::size_t>(Protocol::simple)];
  CHECK(arrived == t.ring_base_latency + t.step_latency[0] + a100.route(g[0], g[1]).latency);
}

TEST_CASE("a ring alone across identical nodes folded to node 0 equals the full simulation") {
  // simulate_collective simulates node 0's share of a ring across 3+ identical nodes (every node's
  // transfers are node 0's, rotated); with fold_nodes = false it runs every transfer. By the
  // cluster's rotation symmetry the two agree rank by rank: finish times, bytes and duration.
  for (int nodes : {3, 5}) {
    const Cluster c(preset_cluster("dgx-h100", nodes));
    const std::vector<DeviceId> g = c.gpus();
    std::vector<DeviceId> half;  // GPUs 2..5 of every node: partial, uniform nodes
    for (DeviceId d : g)
      if (c.device(d).local_index >= 2 && c.device(d).local_index < 6) half.push_back(d);
    for (const std::vector<DeviceId>& group : {g, half})
      for (CommKind kind : {CommKind::all_reduce, CommKind::reduce_scatter, CommKind::all_gather})
        for (Protocol proto : {Protocol::simple, Protocol::ll128, Protocol::ll})
          for (NetworkMode mode : {NetworkMode::flow, NetworkMode::analytical}) {
            CAPTURE(nodes);
            const std::vector<DeviceId>* ranks = &group;
            CAPTURE(ranks->size());
            CAPTURE(static_cast<int>(kind));
            CAPTURE(protocol_name(proto));
            const CollectiveCall call{kind, *ranks, 3e7, "ring", proto, 1};
            const auto folded = simulate_collective(c, mode, call);
            const auto full = simulate_collective(c, mode, call, false);
            CHECK(folded.folded);
            CHECK_FALSE(full.folded);
            CHECK(folded.duration() == full.duration());
            REQUIRE(folded.rank_finish.size() == full.rank_finish.size());
            for (std::size_t r = 0; r < full.rank_finish.size(); ++r) {
              CHECK(folded.rank_finish[r] == full.rank_finish[r]);
              CHECK(folded.bytes_sent[r] == doctest::Approx(full.bytes_sent[r]).epsilon(1e-12));
            }
            // Closed form of the bytes: every rank sends S chunks of n / P.
            const double p = static_cast<double>(ranks->size());
            const double steps = kind == CommKind::all_reduce ? 2 * (p - 1) : p - 1;
            CHECK(folded.bytes_sent[0] == doctest::Approx(steps * 3e7 / p).epsilon(1e-12));
          }
  }
  // Not folded (and so still equal): two nodes, non-uniform nodes, an explicit topology.
  const Cluster two(preset_cluster("dgx-h100", 2));
  const CollectiveCall call2{CommKind::all_reduce, two.gpus(), 1e7, "ring", Protocol::simple, 1};
  CHECK_FALSE(simulate_collective(two, NetworkMode::flow, call2).folded);
  CHECK(simulate_collective(two, NetworkMode::flow, call2).duration() ==
        simulate_collective(two, NetworkMode::flow, call2, false).duration());
  const Cluster four(preset_cluster("dgx-h100", 4));
  auto uneven = four.gpus();
  uneven.pop_back();  // node 3 holds 7 GPUs
  const CollectiveCall call3{CommKind::all_reduce, uneven, 1e7, "ring", Protocol::simple, 1};
  CHECK_FALSE(simulate_collective(four, NetworkMode::flow, call3).folded);
  CHECK(simulate_collective(four, NetworkMode::flow, call3).duration() ==
        simulate_collective(four, NetworkMode::flow, call3, false).duration());
}
