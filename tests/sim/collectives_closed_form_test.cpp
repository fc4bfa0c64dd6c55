// Collective algorithms against their α-β closed forms on an uncontended uniform topology.
//
// Topology: P GPUs on one full-bisection switch, every link B bytes/s with latency λ per hop, so a
// GPU-to-GPU route has latency 2λ and bandwidth B. Protocol: no base latency, per-step latency s,
// efficiency 1 (testing::plain_protocols). Then each step costs α = s + 2λ plus bytes × β, β = 1/B.
//
// The clock counts integer picoseconds. With β = 6 ps/byte, α = 4 µs and n ∈ {0, 1 KiB, 1 GiB},
// n β / P is a whole number of picoseconds for every P tested (6 · 1024 / 3 = 2048, ...), so the
// simulated time must equal the closed form to 1e-9 relative (in fact exactly). A second case with
// arbitrary α, β bounds the integer clock's rounding: at most 1/2 ps per step.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "analysis/config/cluster.hpp"
#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"
#include "sim/collectives/builtin.hpp"
#include "sim/collectives/collectives.hpp"
#include "tests/sim/topologies.hpp"

using namespace spsim::sim;
using spsim::analysis::preset_cluster;

namespace {

struct Setup {
  double beta_ps;  // picoseconds per byte
  Time hop;        // λ
  Time step;       // s
};

CollectiveResult run_one(const Cluster& cluster, const ProtocolTable& table, CommKind kind, double bytes,
                         const std::string& algo, NetworkMode mode = NetworkMode::flow) {
  Engine engine;
  auto network = make_network(mode, engine, cluster);
  Collectives coll(*network, table);
  CollectiveResult out;
  bool done = false;
  coll.start(CollectiveCall{kind, cluster.gpus(), bytes, algo, Protocol::simple, 1},
             [&](const CollectiveResult& r) {
               out = r;
               done = true;
             });
  engine.run();
  REQUIRE(done);
  return out;
}

constexpr int kSizes[] = {2, 3, 4, 8, 16, 64};
constexpr double kBytes[] = {0, 1024, 1073741824};

// Closed forms (DESIGN.md §6), times in picoseconds.
double ring_all_reduce(int p, double a, double n, double b) {
  return 2.0 * (p - 1) * (a + n * b / p);
}
double ring_half(int p, double a, double n, double b) {
  return (p - 1) * (a + n * b / p);
}  // RS, AG, pairwise A2A

struct Case {
  CommKind kind;
  const char* algo;
  double (*formula)(int, double, double, double);
  double sent_factor;  // bytes each rank sends, in units of (P-1) n / P
};
const Case kCases[] = {
    {CommKind::all_reduce, "ring", ring_all_reduce, 2},
    {CommKind::reduce_scatter, "ring", ring_half, 1},
    {CommKind::all_gather, "ring", ring_half, 1},
    {CommKind::all_to_all, "pairwise", ring_half, 1},
};

void check_closed_forms(const Setup& s, double rel_tol, bool bound_by_rounding) {
  const double bw = 1e12 / s.beta_ps;
  const double alpha = static_cast<double>((s.step + 2 * s.hop).count_ps());
  for (int p : kSizes) {
    const Cluster cluster(testing::star_cluster(p, bw, s.hop));
    const auto table = testing::plain_protocols(s.step);
    for (double n : kBytes)
      for (const Case& c : kCases) {
        CAPTURE(p);
        CAPTURE(n);
        CAPTURE(std::string(spsim::rt::comm_kind_name(c.kind)));
        const auto r = run_one(cluster, table, c.kind, n, c.algo);
        const double expected = c.formula(p, alpha, n, s.beta_ps);
        const double got = static_cast<double>(r.duration().count_ps());
        if (bound_by_rounding) {
          const double steps = c.kind == CommKind::all_reduce ? 2.0 * (p - 1) : p - 1.0;
          CHECK(std::abs(got - expected) <= 0.5 * steps + 1e-6);
        } else {
          CHECK(std::abs(got - expected) <= rel_tol * expected);
        }
        for (double sent : r.bytes_sent) CHECK(sent == doctest::Approx(c.sent_factor * (p - 1) * n / p));
      }
  }
}

}  // namespace

TEST_CASE("ring and pairwise collectives equal the α-β closed forms to 1e-9") {
  check_closed_forms(Setup{6.0, Time::from_us(1), Time::from_us(2)}, 1e-9, false);
}

TEST_CASE("with arbitrary α and β the integer clock adds at most 1/2 ps per step") {
  check_closed_forms(Setup{10.0 / 1.7, Time::ps(700'123), Time::ps(1'300'457)}, 0, true);
}

TEST_CASE("the analytical network gives the same uncontended ring times") {
  const Cluster cluster(testing::star_cluster(8, 1e12 / 6, Time::from_us(1)));
  const auto table = testing::plain_protocols(Time::from_us(2));
  for (double n : kBytes) {
    const auto flow = run_one(cluster, table, CommKind::all_reduce, n, "ring", NetworkMode::flow);
    const auto ana = run_one(cluster, table, CommKind::all_reduce, n, "ring", NetworkMode::analytical);
    CHECK(flow.duration() == ana.duration());
  }
}

TEST_CASE("recursive halving-doubling: log2(P) α + (P-1) n β / P per half") {
  const double beta = 6;
  const Time hop = Time::from_us(1), step = Time::from_us(2);
  const double alpha = 4e6;
  for (int p : {2, 4, 8, 16, 64}) {
    const Cluster cluster(testing::star_cluster(p, 1e12 / beta, hop));
    const auto table = testing::plain_protocols(step);
    const double lg = std::log2(p);
    for (double n : kBytes) {
      CAPTURE(p);
      CAPTURE(n);
      const double half = lg * alpha + (p - 1) * n * beta / p;
      CHECK(static_cast<double>(run_one(cluster, table, CommKind::reduce_scatter, n, "halving_doubling")
                                    .duration()
                                    .count_ps()) == doctest::Approx(half).epsilon(1e-9));
      CHECK(static_cast<double>(
                run_one(cluster, table, CommKind::all_gather, n, "halving_doubling").duration().count_ps()) ==
            doctest::Approx(half).epsilon(1e-9));
      CHECK(static_cast<double>(
                run_one(cluster, table, CommKind::all_reduce, n, "halving_doubling").duration().count_ps()) ==
            doctest::Approx(2 * half).epsilon(1e-9));
    }
  }
}

TEST_CASE("direct all-to-all shares each port: α + (P-1) n β / P; sendrecv: α + n β") {
  const double beta = 6, alpha = 4e6;
  for (int p : {2, 3, 8, 16}) {
    const Cluster cluster(testing::star_cluster(p, 1e12 / beta, Time::from_us(1)));
    const auto table = testing::plain_protocols(Time::from_us(2));
    for (double n : kBytes) {
      CAPTURE(p);
      CAPTURE(n);
      const auto a2a = run_one(cluster, table, CommKind::all_to_all, n, "direct");
      CHECK(static_cast<double>(a2a.duration().count_ps()) ==
            doctest::Approx(alpha + (p - 1) * n * beta / p).epsilon(1e-9));
      const auto sr = run_one(cluster, table, CommKind::sendrecv, n, "direct");
      CHECK(static_cast<double>(sr.duration().count_ps()) == doctest::Approx(alpha + n * beta).epsilon(1e-9));
      for (double sent : sr.bytes_sent) CHECK(sent == n);
    }
  }
}

TEST_CASE("NVLS: s + λ + n (P+1) / (P × efficiency × B)") {
  const double beta = 6;
  const Time hop = Time::from_us(1), step = Time::from_us(2);
  for (int p : {2, 4, 8}) {
    const Cluster cluster(testing::star_cluster(p, 1e12 / beta, hop, DeviceKind::nvswitch, true));
    const auto table = testing::plain_protocols(step);
    for (double n : kBytes) {
      CAPTURE(p);
      CAPTURE(n);
      // Efficiency 5/6 makes the transfer time fractional: one rounding to the picosecond.
      const double expected = 3e6 + n * (p + 1) / p * beta / table.nvls_efficiency;
      const auto r = run_one(cluster, table, CommKind::all_reduce, n, "nvls");
      CHECK(std::abs(static_cast<double>(r.duration().count_ps()) - expected) <= 0.5);
      for (double sent : r.bytes_sent) CHECK(sent == doctest::Approx(n * (p + 1) / p));
    }
  }
}

TEST_CASE("NVLS channel pipeline: s + λ + max(n (P+1) / (P B), (n / (C c) + 2)(sync + c / b)), NCCL's chunk c") {
  // NCCL's chunk for one-node NVLS (src/enqueue.cc), counted by hand: 128 KiB, 64 KiB below
  // 64 C P × 128 KiB, 32 KiB below 8 C P × 64 KiB, 16 KiB below 2 C P × 32 KiB.
  const double kib = 1024, mib = kib * kib, gib = mib * kib;
  // 16 channels × 8 GPUs = 128 chunks: 64 × 128 × 128 KiB = 1 GiB, 8 × 128 × 64 KiB = 64 MiB,
  // 2 × 128 × 32 KiB = 8 MiB.
  CHECK(nvls_chunk_bytes(gib, 16, 8, 128 * kib) == 128 * kib);  // not below 1 GiB
  CHECK(nvls_chunk_bytes(gib - 1, 16, 8, 128 * kib) == 64 * kib);
  CHECK(nvls_chunk_bytes(256 * mib, 16, 8, 128 * kib) == 64 * kib);
  CHECK(nvls_chunk_bytes(64 * mib, 16, 8, 128 * kib) == 64 * kib);  // not below 64 MiB
  CHECK(nvls_chunk_bytes(64 * mib - 1, 16, 8, 128 * kib) == 32 * kib);
  CHECK(nvls_chunk_bytes(16 * mib, 16, 8, 128 * kib) == 32 * kib);
  CHECK(nvls_chunk_bytes(8 * mib - 1, 16, 8, 128 * kib) == 16 * kib);
  // 32 × 72 = 2,304 chunks: 8 × 2304 × 64 KiB = 1.125 GiB, 64 × 2304 × 128 KiB = 18 GiB.
  CHECK(nvls_chunk_bytes(gib, 32, 72, 128 * kib) == 32 * kib);
  CHECK(nvls_chunk_bytes(2 * gib, 32, 72, 128 * kib) == 64 * kib);
  CHECK(nvls_chunk_bytes(18 * gib, 32, 72, 128 * kib) == 128 * kib);
  // A smaller NCCL_NVLS_CHUNKSIZE is only ever lowered further.
  CHECK(nvls_chunk_bytes(64 * gib, 16, 8, 48 * kib) == 48 * kib);

  // The flow simulation and the tuner's estimate against the closed form, on a star of P GPUs
  // (link B = 1/β, latency λ) where either bound can win: a slow channel rate makes the pipeline
  // bind, a fast one leaves the port.
  const double beta = 6;  // ps per byte
  const Time hop = Time::from_us(1), step = Time::from_us(2);
  for (double channel_GBps : {2.0, 400.0}) {
    for (int p : {2, 8, 72}) {
      const Cluster cluster(testing::star_cluster(p, 1e12 / beta, hop, DeviceKind::nvswitch, true));
      auto table = testing::plain_protocols(step);
      table.nvls_pipeline = {16, 128 * kib, Time::ps(1500000), channel_GBps * 1e9};
      for (double n : {0.0, 16 * mib, 3 * gib}) {
        CAPTURE(channel_GBps);
        CAPTURE(p);
        CAPTURE(n);
        const double c = nvls_chunk_bytes(n, 16, p, 128 * kib);
        const double port_ps = n * (p + 1) / p * beta;  // efficiency 1 under the pipeline
        const double channels_ps = (n / (16 * c) + 2) * (1.5e6 + c / (channel_GBps * 1e9) * 1e12);
        const double expected = 3e6 + std::max(port_ps, channels_ps);
        const auto r = run_one(cluster, table, CommKind::all_reduce, n, "nvls");
        CHECK(std::abs(static_cast<double>(r.duration().count_ps()) - expected) <= 1);
        for (double sent : r.bytes_sent) CHECK(sent == doctest::Approx(n * (p + 1) / p));
        const CollectiveCall call{CommKind::all_reduce, cluster.gpus(), n, "nvls", Protocol::simple, 1};
        const auto costs =
            resolve_protocol(table, Protocol::simple, AlgorithmFamily::nvls, CommKind::all_reduce, false, p);
        CHECK(costs.efficiency == 1.0);
        const double estimate = default_algorithms().algorithm("nvls").estimate_s(
            call, make_group_shape(cluster, cluster.gpus()), costs);
        CHECK(std::abs(estimate * 1e12 - expected) <= 1);
      }
    }
  }
  // Across nodes (NVLS-Tree's and SHARP's phases) the pipeline is not used: NVLS's efficiency stays.
  auto table = testing::plain_protocols(step);
  table.nvls_pipeline = {16, 128 * kib, Time::ps(1500000), 2e9};
  const auto multi = resolve_protocol(table, Protocol::simple, AlgorithmFamily::nvls, CommKind::all_reduce, true, 8);
  CHECK(multi.efficiency == table.nvls_efficiency);
  CHECK_FALSE(multi.nvls_pipeline.active());
}

TEST_CASE("tree on one node is a chain: latency 2 (P-1) α; every rank's halves go up and down") {
  // One node: both trees are chains of the P ranks (NCCL's intra-node tree), so a zero-byte
  // all-reduce is P-1 hops up and P-1 down.
  const double beta = 6, alpha = 4e6;
  for (int p : {2, 3, 4, 7, 8, 16}) {
    const Cluster cluster(testing::star_cluster(p, 1e12 / beta, Time::from_us(1)));
    const auto table = testing::plain_protocols(Time::from_us(2));
    CAPTURE(p);
    const auto zero = run_one(cluster, table, CommKind::all_reduce, 0, "tree");
    CHECK(static_cast<double>(zero.duration().count_ps()) == 2 * (p - 1) * alpha);
    // Each tree reduces n/2 up its P-1 edges and broadcasts n/2 down them: 2 (P-1) n in all.
    const double n = 64.0 * 1024 * 1024;
    const auto big = run_one(cluster, table, CommKind::all_reduce, n, "tree");
    double total = 0;
    for (double s : big.bytes_sent) total += s;
    CHECK(total == doctest::Approx(2.0 * (p - 1) * n));
    // Bounds: every port carries at least n per direction (n/2 up and n/2 down per tree, one of
    // them in each direction of a chain link... both trees together: >= n); the unpipelined
    // chain, 2 (P-1) hops each moving n through a port, is an upper bound.
    const double t = static_cast<double>(big.duration().count_ps());
    CHECK(t >= n * beta);
    CHECK(t <= 2 * (p - 1) * (alpha + n * beta));
  }
}

TEST_CASE("tree across nodes: zero bytes cost 2 ((L-1) α_intra + depth α_inter)") {
  // Depth of NCCL's double binary tree, by hand: 2 nodes 0 -> 1 (1); 3 nodes the chains 0 -> 2 -> 1
  // and 1 -> 0 -> 2 (2); 4 nodes 0 -> 2 -> {1, 3} (2); 5 nodes 0 -> 4 -> 2 -> {1, 3} (3).
  const Time step = Time::from_us(2);
  const auto table = testing::plain_protocols(step);
  for (auto [nodes, levels] : {std::pair{2, 1}, {3, 2}, {4, 2}, {5, 3}}) {
    const Cluster cluster(preset_cluster("dgx-a100", nodes));
    const auto& g = cluster.gpus();
    const double a_intra = static_cast<double>((step + cluster.route(g[0], g[1]).latency).count_ps());
    const double a_inter = static_cast<double>((step + cluster.route(g[0], g[8]).latency).count_ps());
    CAPTURE(nodes);
    CHECK(node_tree_depth(nodes) == levels);
    const auto r = run_one(cluster, table, CommKind::all_reduce, 0, "tree");
    CHECK(static_cast<double>(r.duration().count_ps()) == 2 * (7 * a_intra + levels * a_inter));
  }
}

TEST_CASE("hierarchical all-reduce of 0 bytes: 2 (L-1) α_intra + 2 (N-1) α_inter") {
  const Cluster cluster(preset_cluster("dgx-a100", 3));
  const Time step = Time::from_us(2);
  const auto table = testing::plain_protocols(step);
  const auto& g = cluster.gpus();
  const double a_intra = static_cast<double>((step + cluster.route(g[0], g[1]).latency).count_ps());
  const double a_inter = static_cast<double>((step + cluster.route(g[0], g[8]).latency).count_ps());
  const auto r = run_one(cluster, table, CommKind::all_reduce, 0, "hierarchical");
  CHECK(static_cast<double>(r.duration().count_ps()) == 2 * 7 * a_intra + 2 * 2 * a_inter);
  // With data every rank sends RS + AG: 2 (L-1) n / L inside the node, plus 2 (N-1)/N of its n/L shard.
  const double n = 8.0 * 1024 * 1024;
  const auto big = run_one(cluster, table, CommKind::all_reduce, n, "hierarchical");
  for (double s : big.bytes_sent) CHECK(s == doctest::Approx(2.0 * 7 * n / 8 + 2.0 * 2 / 3 * n / 8));
}

TEST_CASE("NVLS-Tree: max(port stream, busiest NIC stream) + α_nvls + (2 depth - 1) α_net") {
  // Per port and direction n (G+1)/G (as NVLS); per NIC and direction k tree-edge transfers of
  // n / 2G, where k, the most tree edges one node ends in one direction over both trees, the edges
  // node 0 ends (out0) and the depth are counted by hand from NCCL's trees: 2 nodes 0 -> 1 and 1 -> 0
  // (k 2, out0 2, depth 1); 3 nodes the chains 0 -> 2 -> 1 and, shifted, 1 -> 0 -> 2 (k 3, out0 3,
  // depth 2); 4 nodes 0 -> 2 -> {1, 3} and, mirrored, 3 -> 1 -> {2, 0} (node 2: up, two children
  // down, and up in the other tree: k 4; out0 2; depth 2); 5 nodes 0 -> 4 -> 2 -> {1, 3} and, shifted,
  // 1 -> 0 -> 3 -> {2, 4} (nodes 2 and 3 end four edges: k 4; out0 3; depth 3).
  const Time step = Time::from_us(2);
  auto table = testing::plain_protocols(step);
  table.nvls_latency = {Time::from_us(5), Time::from_us(7)};
  struct Hand {
    int nodes, k, out0, depth;
  };
  const Hand hand[] = {{2, 2, 2, 1}, {3, 3, 3, 2}, {4, 4, 2, 2}, {5, 4, 3, 3}};
  struct Node {
    const char* preset;
    int gpus;  // per node: the preset's 8, or a partial node
  };
  for (const Node& node : {Node{"dgx-h100", 8}, Node{"dgx-b200", 8}, Node{"dgx-h100", 3}}) {
    for (auto [nodes, k, out0, depth] : hand) {
      const Cluster cluster(preset_cluster(node.preset, nodes, "cluster", node.gpus));
      const auto& g = cluster.gpus();
      const double per = node.gpus;
      const DeviceId sw = *cluster.nvls_switch(0);
      const auto& port = cluster.route(g[0], sw);
      const auto& nic = cluster.route(g[0], g[static_cast<std::size_t>(node.gpus)]);
      const double a_nvls = static_cast<double>((Time::from_us(5) + port.latency).count_ps());
      const double a_net = static_cast<double>((Time::from_us(7) + nic.latency).count_ps());
      for (double n : {0.0, 1000003.0, 1073741824.0}) {
        CAPTURE(node.preset);
        CAPTURE(node.gpus);
        CAPTURE(nodes);
        CAPTURE(n);
        const double port_ps =
            a_nvls + n * (per + 1) / per / (table.nvls_efficiency * port.bottleneck_Bps) * 1e12;
        const double nic_ps = a_net + k * n / (2 * per) / (table.tree_efficiency * nic.bottleneck_Bps) * 1e12;
        const double expected = std::max(port_ps, nic_ps) + a_nvls + (2 * depth - 1) * a_net;
        const auto r = run_one(cluster, table, CommKind::all_reduce, n, "nvls_tree");
        // The integer clock rounds each stream and latency to the picosecond: at most 2 ps in all.
        CHECK(std::abs(static_cast<double>(r.duration().count_ps()) - expected) <= 2);
        // Rank 0 pushes n (G+1)/G into its switch and sends half its slice on each tree edge it ends.
        CHECK(r.bytes_sent[0] == doctest::Approx(n * (per + 1) / per + out0 * n / (2 * per)));
        // The tuner's estimate is the same expression.
        const CollectiveCall call{CommKind::all_reduce, g, n, "nvls_tree", Protocol::simple, 1};
        const auto costs = resolve_protocol(table, Protocol::simple, AlgorithmFamily::nvls,
                                            CommKind::all_reduce, true, node.gpus);
        const double estimate =
            default_algorithms().algorithm("nvls_tree").estimate_s(call, make_group_shape(cluster, g), costs);
        CHECK(std::abs(estimate * 1e12 - expected) <= 2);
      }
    }
  }
  // The nodes must each have an NVLS switch and more than one GPU, and it is an across-nodes algorithm.
  CHECK_THROWS_AS(
      run_one(Cluster(preset_cluster("dgx-a100", 2)), table, CommKind::all_reduce, 1e6, "nvls_tree"),
      spsim::InputError);
  CHECK_THROWS_AS(
      run_one(Cluster(preset_cluster("dgx-h100", 1)), table, CommKind::all_reduce, 1e6, "nvls_tree"),
      spsim::InputError);
  const Cluster single(preset_cluster("dgx-h100", 2, "cluster", 1));
  CHECK_THROWS_AS(run_one(single, table, CommKind::all_reduce, 1e6, "nvls_tree"), spsim::InputError);
  // With one GPU per node the tuner still finds an algorithm, at a finite time (tree: the NICs alone).
  for (const char* algo : {"auto", "tree"}) {
    CAPTURE(algo);
    const auto r = run_one(single, table, CommKind::all_reduce, 1e6, algo);
    CHECK(r.duration().seconds() > 0);
    CHECK(r.duration().seconds() < 1);
  }
}

TEST_CASE("PAT: 8 µs + 2.8 µs P + Σ_k (α_k + min(2^k, P - 2^k) n β / P), one GPU per node") {
  // NCCL's PAT constants (protocol.hpp): base 8 µs, 2.8 µs a rank, 4 µs a log step, 0.75 of the
  // bandwidth. The Bruck steps for P = 6: distances 1, 2, 4 moving 1, 2 and 2 chunks (5 = P − 1);
  // for P = 8: 1, 2, 4 chunks; reduce-scatter the same in reverse. β = 6 ps/byte at efficiency 1.
  const double beta_ps = 6.0, bw = 1e12 / beta_ps;
  const Time hop = Time::from_us(1);
  const ProtocolTable table = nccl_protocol_table();
  for (auto [p, chunks] : {std::pair{6, std::vector<int>{1, 2, 2}}, {8, std::vector<int>{1, 2, 4}},
                           {2, std::vector<int>{1}}, {5, std::vector<int>{1, 2, 1}}}) {
    const Cluster cluster(testing::one_gpu_nodes(p, bw, hop));
    for (const CommKind kind : {CommKind::all_gather, CommKind::reduce_scatter}) {
      for (const double n : {0.0, 3.0 * 1024 * 1024 * 1024}) {
        CAPTURE(p);
        CAPTURE(n);
        const double alpha = 4e6 + 2 * 1e6;  // ps: PAT's step + two hops
        double want = 8e6 + 2.8e6 * p;
        for (int c : chunks) want += alpha + c * (n / p) * beta_ps / 0.75;
        const auto r = run_one(cluster, table, kind, n, "pat");
        CHECK(static_cast<double>(r.duration().count_ps()) == doctest::Approx(want).epsilon(1e-9));
        for (double sent : r.bytes_sent) CHECK(sent == doctest::Approx((p - 1) * n / p));
        // The tuner's estimate is the same formula.
        Engine engine;
        auto network = make_network(NetworkMode::flow, engine, cluster);
        const Collectives coll(*network, table);
        const auto choice = coll.choose(CollectiveCall{kind, cluster.gpus(), n, "pat", Protocol::simple, 1});
        CHECK(choice.predicted_s * 1e12 == doctest::Approx(want).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("the tuner takes PAT for small all-gathers across one-GPU nodes and the ring for large ones") {
  const ProtocolTable table = nccl_protocol_table();
  const Cluster cluster(testing::one_gpu_nodes(64, 25e9, Time::from_us(1)));
  Engine engine;
  auto network = make_network(NetworkMode::flow, engine, cluster);
  const Collectives coll(*network, table);
  auto algo = [&](double n) {
    return coll.choose(CollectiveCall{CommKind::all_gather, cluster.gpus(), n, "auto", std::nullopt, 1}).algorithm;
  };
  // 1 MiB: the ring's 63 steps of ≥ 2 µs latency and more lose to PAT's 8 + 179 + 6 × 6 µs; 4 GiB: PAT's
  // 0.75 bandwidth loses.
  CHECK(algo(1024.0 * 1024) == "pat");
  CHECK(algo(4.0 * 1024 * 1024 * 1024) == "ring");
  // Two GPUs on a node: NCCL does not enable PAT, and neither does the tuner; asked for, it is refused.
  const Cluster two(testing::star_cluster(4, 25e9, Time::from_us(1)));
  auto two_net = make_network(NetworkMode::flow, engine, two);
  const Collectives two_coll(*two_net, table);
  CHECK(two_coll.choose(CollectiveCall{CommKind::all_gather, two.gpus(), 1024, "auto", std::nullopt, 1}).algorithm !=
        "pat");
  CHECK_THROWS_AS((void)two_coll.choose(CollectiveCall{CommKind::all_gather, two.gpus(), 1024, "pat", std::nullopt, 1}),
                  spsim::InputError);
}

namespace {
// A preset of `nodes` nodes (`gpus` each) whose single fabric switch reduces in the network (SHARP).
Cluster sharp_cluster(const char* preset, int nodes, int gpus = 0) {
  nlohmann::json section{{"preset", preset},
                         {"nodes", nodes},
                         {"inter_node", {{"fabric", {{"kind", "single_switch"}, {"sharp", true}}}}}};
  if (gpus > 0) section["gpus_per_node"] = gpus;
  return Cluster(spsim::analysis::parse_cluster(section, "cluster"));
}
}  // namespace

TEST_CASE("CollNet Direct: max(NVLink stream, NIC stream) + 2 (α_nvl + (G-1) a), NCCL's latency at n = 0") {
  // Per NVLink port and direction the reduce-scatter's and the all-gather's slices, 2n(G-1)/G; per NIC
  // and direction the node-reduced slice, n/G, up to the switch and back. The port stream pays
  // CollNet's NVLink latency + the GPU -> NVSwitch link's latency, the tail 2 (that NVLink latency + the
  // GPU-to-GPU route latency inside a node) + a per local peer twice, α_net = its network latency + the
  // route latency GPU -> network switch; e on every link. Both network models give it.
  auto table = testing::plain_protocols(Time::from_us(2));
  table.collnet_intra_latency = Time::from_us(3);
  table.collnet_net_latency = Time::from_us(11);
  table.collnet_arity_latency = Time::ps(500000);
  table.collnet_efficiency = 0.8;
  for (int gpus : {8, 3, 1})
    for (int nodes : {2, 5}) {
      const Cluster cluster = sharp_cluster("dgx-h100", nodes, gpus);
      const auto& g = cluster.gpus();
      const DeviceId sw = *cluster.find_device("fabric");
      const auto& net = cluster.route(g[0], sw);
      const double per = gpus;
      for (double n : {0.0, 1000003.0, 1073741824.0}) {
        CAPTURE(gpus);
        CAPTURE(nodes);
        CAPTURE(n);
        double port_ps = 0, tail_ps = 0;
        if (gpus > 1) {
          const auto& peer = cluster.route(g[0], g[1]);
          const Link& port = cluster.link(peer.links.front());
          CHECK(cluster.device(port.to).kind == DeviceKind::nvswitch);
          port_ps = static_cast<double>((Time::from_us(3) + port.latency).count_ps()) +
                    2 * n * (per - 1) / per / (0.8 * port.capacity_Bps) * 1e12;
          tail_ps = 2 * static_cast<double>((Time::from_us(3) + peer.latency).count_ps()) + 2 * (per - 1) * 500000;
        }
        const double net_ps = static_cast<double>((Time::from_us(11) + net.latency).count_ps()) +
                              n / per / (0.8 * net.bottleneck_Bps) * 1e12;
        const double expected = std::max(port_ps, net_ps) + tail_ps;
        const auto r = run_one(cluster, table, CommKind::all_reduce, n, "collnet_direct");
        CHECK(std::abs(static_cast<double>(r.duration().count_ps()) - expected) <= 2);
        const auto analytical = run_one(cluster, table, CommKind::all_reduce, n, "collnet_direct", NetworkMode::analytical);
        CHECK(std::abs(static_cast<double>(analytical.duration().count_ps()) - expected) <= 2);
        CHECK(r.bytes_sent[0] == doctest::Approx((per - 1) * 2 * n / per + n / per));
        const CollectiveCall call{CommKind::all_reduce, g, n, "collnet_direct", Protocol::simple, 1};
        const auto costs =
            resolve_protocol(table, Protocol::simple, AlgorithmFamily::collnet, CommKind::all_reduce, true, gpus);
        const double estimate = default_algorithms().algorithm("collnet_direct").estimate_s(
            call, make_group_shape(cluster, g), costs);
        CHECK(std::abs(estimate * 1e12 - expected) <= 2);
      }
    }
  // NCCL's constants: at n = 0 on DGX H100 nodes, 2 (3.7 + 7 × 0.4) µs + 31 µs plus the routes' latencies.
  const Cluster h100 = sharp_cluster("dgx-h100", 4);
  const auto& g = h100.gpus();
  const ProtocolTable& nccl = h100.config().tuning;
  const double latency_us = 2 * (3.7 + 7 * 0.4) + 31 + (2 * h100.route(g[0], g[1]).latency).us() +
                            h100.route(g[0], *h100.find_device("fabric")).latency.us();  // the NIC stream binds
  CHECK(run_one(h100, nccl, CommKind::all_reduce, 0, "collnet_direct").duration().us() ==
        doctest::Approx(latency_us).epsilon(1e-9));
  // Without an in-network reduction, on one node, or on nodes of unequal size, it cannot run.
  CHECK_THROWS_AS(run_one(Cluster(preset_cluster("dgx-h100", 2)), table, CommKind::all_reduce, 1e6, "collnet_direct"),
                  spsim::InputError);
  CHECK_THROWS_AS(run_one(sharp_cluster("dgx-h100", 1), table, CommKind::all_reduce, 1e6, "collnet_direct"),
                  spsim::InputError);
}

TEST_CASE("NVLS across nodes on a SHARP switch: max(port stream, NIC stream) + α_nvls") {
  // Per port and direction n (G+1)/G into and out of the node's NVSwitch (as NVLS); per NIC and
  // direction the slice n/G to the network switch and back. NVLS's efficiency on the ports, the NVLS
  // family's network efficiency (the tree's) on the NICs.
  auto table = testing::plain_protocols(Time::from_us(2));
  table.nvls_latency = {Time::from_us(5), Time::from_us(7)};
  table.nvls_efficiency = 0.85;
  table.tree_efficiency = 0.9;
  for (int nodes : {2, 3, 8}) {
    const Cluster cluster = sharp_cluster("dgx-h100", nodes);
    const auto& g = cluster.gpus();
    const auto& port = cluster.route(g[0], *cluster.nvls_switch(0));
    const auto& net = cluster.route(g[0], *cluster.find_device("fabric"));
    const double a_nvls = static_cast<double>((Time::from_us(5) + port.latency).count_ps());
    const double a_net = static_cast<double>((Time::from_us(7) + net.latency).count_ps());
    for (double n : {0.0, 1000003.0, 1073741824.0}) {
      CAPTURE(nodes);
      CAPTURE(n);
      const double port_ps = a_nvls + n * 9 / 8 / (0.85 * port.bottleneck_Bps) * 1e12;
      const double net_ps = a_net + n / 8 / (0.9 * net.bottleneck_Bps) * 1e12;
      const double expected = std::max(port_ps, net_ps) + a_nvls;
      const auto r = run_one(cluster, table, CommKind::all_reduce, n, "nvls");
      CHECK(std::abs(static_cast<double>(r.duration().count_ps()) - expected) <= 2);
      CHECK(r.bytes_sent[0] == doctest::Approx(n * 9 / 8 + n / 8));
      const CollectiveCall call{CommKind::all_reduce, g, n, "nvls", Protocol::simple, 1};
      const auto costs =
          resolve_protocol(table, Protocol::simple, AlgorithmFamily::nvls, CommKind::all_reduce, true, 8);
      const double estimate =
          default_algorithms().algorithm("nvls").estimate_s(call, make_group_shape(cluster, g), costs);
      CHECK(std::abs(estimate * 1e12 - expected) <= 2);
    }
  }
  // Across nodes without SHARP NVLS cannot run (nvls_tree joins such nodes), nor with one GPU per node
  // (nothing to reduce in the NVSwitch); the tuner then takes CollNet, at a finite time.
  CHECK_THROWS_AS(run_one(Cluster(preset_cluster("dgx-h100", 2)), table, CommKind::all_reduce, 1e6, "nvls"),
                  spsim::InputError);
  const Cluster one_gpu = sharp_cluster("dgx-h100", 2, 1);
  CHECK_THROWS_AS(run_one(one_gpu, table, CommKind::all_reduce, 1e6, "nvls"), spsim::InputError);
  for (double n : {0.0, 1e6}) {
    const auto r = run_one(one_gpu, one_gpu.config().tuning, CommKind::all_reduce, n, "auto");
    CHECK(r.algorithm == "collnet_direct");
    CHECK(std::isfinite(r.duration().seconds()));
    CHECK(r.duration().seconds() < 1e-3);
  }
}

TEST_CASE("with SHARP the tuner takes the in-network reductions; without, it never offers them") {
  const Cluster plain(preset_cluster("dgx-h100", 16));
  const Cluster sharp = sharp_cluster("dgx-h100", 16);
  const Cluster a100 = sharp_cluster("dgx-a100", 16);  // no NVLS: CollNet Direct
  for (double n : {16.0 * (1 << 20), 1073741824.0}) {
    CAPTURE(n);
    const auto without = run_one(plain, plain.config().tuning, CommKind::all_reduce, n, "auto");
    CHECK(without.algorithm != "collnet_direct");
    CHECK(without.algorithm != "nvls");
    const auto with = run_one(sharp, sharp.config().tuning, CommKind::all_reduce, n, "auto");
    CHECK((with.algorithm == "collnet_direct" || with.algorithm == "nvls"));
    CHECK(with.duration() < without.duration());
    CHECK(run_one(a100, a100.config().tuning, CommKind::all_reduce, n, "auto").algorithm == "collnet_direct");
  }
}
