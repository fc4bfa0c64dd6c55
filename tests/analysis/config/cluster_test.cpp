// Tests of cluster presets, routing and parse_cluster's validation.
#include "analysis/config/cluster.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"

using namespace spsim::sim;
using spsim::analysis::cluster_presets;
using spsim::analysis::parse_cluster;
using spsim::analysis::preset_cluster;
using json = nlohmann::json;

namespace {

// The InputError's `where` for a section, or "" when it parses.
std::string error_where(const json& section) {
  try {
    (void)parse_cluster(section, "cluster");
  } catch (const spsim::InputError& e) {
    return e.where();
  }
  return "";
}

std::string error_text(const json& section) {
  try {
    (void)parse_cluster(section, "cluster");
  } catch (const spsim::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every preset loads, single and multi node") {
  const auto presets = cluster_presets();
  CHECK(presets == std::vector<std::string>{"dgx-a100", "dgx-b200", "dgx-h100", "gb200-nvl72", "gb300-nvl72",
                                            "hgx-h200", "hgx-h800", "pcie-a100-4"});
  for (const auto& name : presets) {
    CAPTURE(name);
    for (int nodes : {1, 3}) {
      const Cluster c(preset_cluster(name, nodes));
      const int per_node = c.config().gpus_per_node;
      CHECK(c.gpus().size() == static_cast<std::size_t>(per_node * nodes));
      CHECK(c.num_nodes() == nodes);
      // Devices: per node the GPUs and one switch; across nodes a NIC per GPU and one fabric switch.
      const std::size_t expect =
          nodes == 1 ? per_node + 1u : static_cast<std::size_t>(nodes * (2 * per_node + 1) + 1);
      CHECK(c.num_devices() == expect);
    }
  }
}

TEST_CASE("routes: two NVLink hops inside a node, four hops across nodes, GPUs never forward") {
  const Cluster c(preset_cluster("dgx-h100", 2));
  const auto& g = c.gpus();
  const Route& intra = c.route(g[0], g[5]);
  CHECK(intra.links.size() == 2);
  CHECK(intra.link_class == LinkClass::nvlink);
  // NVLink4 450 GB/s x 0.8 efficiency (configs/hardware/links/nvlink4.json).
  CHECK(intra.bottleneck_Bps == doctest::Approx(450e9 * 0.8));
  const Route& inter = c.route(g[3], g[8 + 6]);
  CHECK(inter.links.size() == 4);  // gpu -> nic -> fabric -> nic -> gpu
  CHECK(inter.link_class == LinkClass::network);
  CHECK(inter.bottleneck_Bps == doctest::Approx(50e9 * 0.95));  // NDR, ib-ndr.json
  for (LinkId l : inter.links) {
    const auto& from = c.device(c.link(l).from);
    CHECK((from.kind != DeviceKind::gpu || c.link(l).from == g[3]));
  }
  CHECK(&c.route(g[3], g[14]) == &inter);  // cached
  CHECK(c.route(g[1], g[1]).links.empty());
}

TEST_CASE("GB300 NVL72: Blackwell Ultra GPUs, and an XDR NIC per GPU that PCIe Gen6 does not throttle") {
  const Cluster c(preset_cluster("gb300-nvl72", 2));
  const auto& gpu = c.config().gpu;
  CHECK(gpu.name == "b300");
  CHECK(gpu.hbm_bytes == 288e9);       // NVIDIA's Blackwell Ultra blog: 288 GB HBM3E
  REQUIRE(gpu.sm.has_value());
  CHECK(gpu.sm->sm_count == 160);      // 160 SMs
  CHECK(gpu.sm->sfu_per_clk == 32.0);  // twice Blackwell's exponential throughput
  const auto& g = c.gpus();
  CHECK(c.route(g[0], g[71]).link_class == LinkClass::nvlink);  // one rack is one NVLink domain
  const Route& inter = c.route(g[0], g[72]);
  CHECK(inter.link_class == LinkClass::network);
  // min(XDR 100 GB/s x 0.95, PCIe Gen6 121 GB/s x 0.8 = 96.8): the NIC's port, not its PCIe attach
  // (Gen5's 63 x 0.8 would halve it).
  CHECK(inter.bottleneck_Bps == doctest::Approx(100e9 * 0.95));
  CHECK(c.nvls_switch(0).has_value());
}

TEST_CASE("nvls switch only on NVLS presets") {
  CHECK(Cluster(preset_cluster("dgx-h100")).nvls_switch(0).has_value());
  CHECK(Cluster(preset_cluster("dgx-b200")).nvls_switch(0).has_value());
  CHECK_FALSE(Cluster(preset_cluster("dgx-a100")).nvls_switch(0).has_value());
  CHECK_FALSE(Cluster(preset_cluster("pcie-a100-4")).nvls_switch(0).has_value());
}

TEST_CASE("values next to a preset override it") {
  const auto c = parse_cluster(json{{"preset", "dgx-a100"},
                                    {"nodes", 2},
                                    {"intra_node", {{"bandwidth_GBps", 100}, {"efficiency", 0.5}}}},
                               "cluster");
  CHECK(c.nodes == 2);
  CHECK(c.intra_node.link.effective_Bps() == doctest::Approx(100e9 * 0.5));
  CHECK(c.intra_node.link.name == "nvlink3");  // the rest of the preset's link stays
  CHECK(c.gpu.name == "a100-sxm4-80gb");
}

TEST_CASE("an explicit cluster from parts") {
  const auto c = parse_cluster(json{{"gpu", "b200"},
                                    {"gpus_per_node", 4},
                                    {"nodes", 2},
                                    {"intra_node", "nvlink5"},
                                    {"inter_node", {{"link", "ib-xdr"}}}},
                               "cluster");
  const Cluster cl(c);
  CHECK(cl.gpus().size() == 8);
  // Across nodes the slowest hop is the NIC's PCIe Gen5 attachment (63 GB/s x 0.8 = 50.4), not
  // XDR (100 x 0.95 = 95).
  CHECK(cl.route(cl.gpus()[0], cl.gpus()[7]).bottleneck_Bps ==
        doctest::Approx(std::min(100e9 * 0.95, 63e9 * 0.8)));
}

TEST_CASE("an explicit topology (DESIGN.md example) places ranks in listed order") {
  const json section = json::parse(R"({ "gpu": "h100-sxm5-80gb",
    "topology": { "devices": [ { "id": "g0", "kind": "gpu" }, { "id": "g1", "kind": "gpu" },
                               { "id": "sw", "kind": "switch" } ],
                  "links": [ { "from": "g0", "to": "sw", "bandwidth_GBps": 100, "latency_us": 1, "duplex": true },
                             { "from": "g1", "to": "sw", "bandwidth_GBps": 100, "latency_us": 1, "duplex": true } ] } })");
  const Cluster c(parse_cluster(section, "cluster"));
  REQUIRE(c.gpus().size() == 2);
  CHECK(c.device(c.gpus()[0]).name == "g0");
  const Route& r = c.route(c.gpus()[0], c.gpus()[1]);
  CHECK(r.latency == Time::from_us(2));
  CHECK(r.bottleneck_Bps == doctest::Approx(100e9));
}

TEST_CASE("parse_cluster errors name the JSON path, the value and the choices") {
  CHECK(error_where(json{{"preset", "dgx-z9"}}) == "cluster.preset");
  CHECK(error_text(json{{"preset", "dgx-z9"}}).find("dgx-a100, dgx-b200") != std::string::npos);
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"nodes", 0}}) == "cluster.nodes");
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"nodes", 2.5}}) == "cluster.nodes");
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"gpu", "v100"}}) == "cluster.gpu");
  CHECK(error_text(json{{"preset", "dgx-a100"}, {"gpu", "v100"}}).find("h100-sxm5-80gb") !=
        std::string::npos);
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"intra_node", {{"bandwidth_GBps", -5}}}}) ==
        "cluster.intra_node.bandwidth_GBps");
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"colour", "red"}}) == "cluster.colour");
  CHECK(error_where(json{{"preset", "dgx-a100"}, {"intra_node", {{"link", "nvlink9"}}}}) ==
        "cluster.intra_node.link");
  CHECK(error_where(json{{"gpu", "b200"}, {"gpus_per_node", 8}, {"nodes", 2}, {"intra_node", "nvlink5"}}) ==
        "cluster.inter_node");
  CHECK(error_where(json{{"preset", "pcie-a100-4"}, {"intra_node", {{"nvls", true}}}}) ==
        "cluster.intra_node.nvls");
  CHECK(error_where(json::array()) == "cluster");
}

TEST_CASE("explicit topology errors") {
  auto topo = [](json links) {
    return json{{"gpu", "h100-sxm5-80gb"},
                {"topology",
                 {{"devices", json::array({{{"id", "a"}, {"kind", "gpu"}},
                                           {{"id", "b"}, {"kind", "gpu"}},
                                           {{"id", "c"}, {"kind", "gpu"}},
                                           {{"id", "s"}, {"kind", "switch"}}})},
                  {"links", links}}}};
  };
  const json ab = {{"from", "a"}, {"to", "s"}, {"bandwidth_GBps", 10}};
  const json bs = {{"from", "b"}, {"to", "s"}, {"bandwidth_GBps", 10}};
  const json cs = {{"from", "c"}, {"to", "s"}, {"bandwidth_GBps", 10}};
  CHECK(error_where(topo(json::array({ab, bs, cs}))).empty());
  // c is only reachable through b, and GPUs do not forward: disconnected.
  const json cb = {{"from", "c"}, {"to", "b"}, {"bandwidth_GBps", 10}};
  CHECK(error_where(topo(json::array({ab, bs, cb}))) == "cluster.topology");
  CHECK(error_text(topo(json::array({ab, bs, cb}))).find("disconnected") != std::string::npos);
  json neg = cs;
  neg["bandwidth_GBps"] = -1;
  CHECK(error_where(topo(json::array({ab, bs, neg}))) == "cluster.topology.links[2].bandwidth_GBps");
  json bad_end = cs;
  bad_end["to"] = "nowhere";
  CHECK(error_where(topo(json::array({ab, bs, bad_end}))) == "cluster.topology.links[2].to");
  json bad_kind = topo(json::array({ab, bs, cs}));
  bad_kind["topology"]["devices"][3]["kind"] = "router";
  CHECK(error_where(bad_kind) == "cluster.topology.devices[3].kind");
}

TEST_CASE("gpus_per_node next to a preset lowers it (a partial node), never raises it") {
  const Cluster partial(
      parse_cluster(json{{"preset", "dgx-h100"}, {"nodes", 2}, {"gpus_per_node", 4}}, "cluster"));
  CHECK(partial.gpus().size() == 8);
  CHECK(partial.num_nodes() == 2);
  // The partial node keeps the preset's NVSwitch (and its NVLS) for the GPUs it uses.
  CHECK(partial.nvls_switch(0).has_value());
  try {
    (void)parse_cluster(json{{"preset", "dgx-h100"}, {"gpus_per_node", 16}}, "cluster");
    FAIL("expected an InputError");
  } catch (const spsim::InputError& e) {
    CHECK(e.where() == "cluster.gpus_per_node");
    CHECK(std::string(e.message()).find("has 8") != std::string::npos);
  }
}

namespace {

json fat_tree(int nodes, int per_leaf, double oversubscription) {
  return json{
      {"preset", "dgx-h100"},
      {"nodes", nodes},
      {"inter_node",
       {{"fabric",
         {{"kind", "fat_tree"}, {"nodes_per_leaf", per_leaf}, {"oversubscription", oversubscription}}}}}};
}

// Seconds a ring collective of `bytes` takes alone on every GPU of `c` (flow model, Simple).
double ring_seconds(const Cluster& c, spsim::rt::CommKind kind, double bytes) {
  const CollectiveCall call{kind, c.gpus(), bytes, "ring", Protocol::simple, 1};
  return simulate_collective(c, NetworkMode::flow, call).duration().seconds();
}

}  // namespace

TEST_CASE("a fat tree: leaf switches per group of nodes, a spine, uplinks of the oversubscribed bandwidth") {
  // 4 DGX H100 nodes, 2 per leaf, 2:1: per node 8 GPUs + 8 NICs + an NVSwitch; 2 leaves and a spine.
  const Cluster c(parse_cluster(fat_tree(4, 2, 2), "cluster"));
  CHECK(c.num_devices() == static_cast<std::size_t>(4 * (2 * 8 + 1) + 2 + 1));
  CHECK(c.find_device("leaf1").has_value());
  CHECK_FALSE(c.find_device("fabric").has_value());
  const auto& g = c.gpus();
  // Same leaf: gpu -> nic -> leaf0 -> nic -> gpu. Other leaf: ... -> leaf0 -> spine -> leaf1 -> ...
  CHECK(c.route(g[0], g[8 + 3]).links.size() == 4);
  const Route& across = c.route(g[0], g[16 + 3]);
  REQUIRE(across.links.size() == 6);
  // Uplink: 2 nodes x 8 NICs x NDR 50 GB/s / 2, at the NIC link's efficiency 0.95 (ib-ndr.json).
  const Link& up = c.link(across.links[2]);
  CHECK(c.device(up.from).name == "leaf0");
  CHECK(c.device(up.to).name == "spine");
  CHECK(up.capacity_Bps == doctest::Approx(2 * 8 * 50e9 / 2 * 0.95));
  CHECK(across.bottleneck_Bps == doctest::Approx(50e9 * 0.95));  // a lone flow still has its NIC's rate
  // One leaf holds every node: no spine.
  const Cluster one(parse_cluster(fat_tree(3, 4, 2), "cluster"));
  CHECK(one.num_devices() == static_cast<std::size_t>(3 * (2 * 8 + 1) + 1));
  CHECK_FALSE(one.find_device("spine").has_value());
  // The last leaf may be partly filled; its uplinks are those of a full leaf.
  const Cluster odd(parse_cluster(fat_tree(5, 2, 4), "cluster"));
  CHECK(odd.find_device("leaf2").has_value());
  const auto& og = odd.gpus();
  const Route& last = odd.route(og[32], og[0]);
  REQUIRE(last.links.size() == 6);
  CHECK(odd.link(last.links[2]).capacity_Bps == doctest::Approx(2 * 8 * 50e9 / 4 * 0.95));
}

TEST_CASE("oversubscribed uplinks limit traffic between leaves, by max-min sharing") {
  // A ring's channel c leaves node a from its GPU c - 1 and enters node a + 1 at GPU c, each over
  // its own NIC (sim/collectives/ring.cpp): with 4 nodes, 2 per leaf, the hops n1 -> n2 and n3 -> n0
  // cross the spine, 8 channels each, 8 x 47.5 = 380 GB/s up each leaf's uplinks. Uplinks of
  // 2 x 8 x 47.5 / R: R = 1 (760) and R = 2 (380) carry that at the NICs' rate, so the ring's time
  // is the same; R = 4 (190) gives each crossing flow 190 / 8 = 23.75 GB/s, half the NIC rate. The
  // inter-node hops set a ring step's pace (a GPU's NVLink4 port, 360 GB/s, carries its 7 intra-node
  // channels at 51.4 each, above the NIC's 47.5). A step takes α + chunk / rate, chunk = n / (8 × 32),
  // so R = 4 adds exactly (P − 1) × chunk × (1 / 23.75 − 1 / 47.5) GB/s = 31 × chunk / 47.5 GB/s.
  using spsim::rt::CommKind;
  const double bytes = 1024.0 * 1024 * 1024, chunk = bytes / (8 * 32), nic = 50e9 * 0.95;  // ib-ndr.json
  const Cluster full(parse_cluster(fat_tree(4, 2, 1), "cluster"));
  const Cluster two(parse_cluster(fat_tree(4, 2, 2), "cluster"));
  const Cluster four(parse_cluster(fat_tree(4, 2, 4), "cluster"));
  const double t_full = ring_seconds(full, CommKind::all_gather, bytes);
  CHECK(ring_seconds(two, CommKind::all_gather, bytes) == doctest::Approx(t_full).epsilon(1e-9));
  CHECK(ring_seconds(four, CommKind::all_gather, bytes) - t_full ==
        doctest::Approx(31 * chunk / nic).epsilon(1e-6));
  // Across one leaf there is no spine and oversubscription changes nothing.
  const Cluster one_leaf(parse_cluster(fat_tree(4, 4, 4), "cluster"));
  const Cluster flat(preset_cluster("dgx-h100", 4));
  CHECK(ring_seconds(one_leaf, CommKind::all_gather, bytes) ==
        doctest::Approx(ring_seconds(flat, CommKind::all_gather, bytes)).epsilon(1e-12));
}

TEST_CASE("a ring over several leaves is simulated in full, never folded to one node") {
  const CollectiveCall call{spsim::rt::CommKind::all_reduce, {}, 64e6, "ring", Protocol::simple, 1};
  auto folded = [&](const Cluster& c) {
    CollectiveCall k = call;
    k.ranks = c.gpus();
    return simulate_collective(c, NetworkMode::flow, k).folded;
  };
  CHECK(folded(Cluster(preset_cluster("dgx-h100", 4))));
  CHECK(folded(Cluster(parse_cluster(fat_tree(4, 4, 2), "cluster"))));  // one leaf: symmetric
  CHECK_FALSE(folded(Cluster(parse_cluster(fat_tree(4, 2, 2), "cluster"))));
}

TEST_CASE("a ring on one rail-optimized group is folded with PXN only, and folding changes no result") {
  // Without PXN every node's cross-rail hop shares its rail leaf's uplinks with the other nodes' (4:1
  // here, so they bind): node 0's share alone would miss that. With PXN the hops stay on the rail leaves.
  for (const bool pxn : {true, false}) {
    CAPTURE(pxn);
    json section = fat_tree(4, 4, 4);
    section["inter_node"]["fabric"]["kind"] = "rail_optimized";
    section["inter_node"]["fabric"]["pxn"] = pxn;
    const Cluster c(parse_cluster(section, "cluster"));
    CollectiveCall call{spsim::rt::CommKind::all_gather, c.gpus(), 1e9, "ring", Protocol::simple, 1};
    const auto fold = simulate_collective(c, NetworkMode::flow, call);
    const auto full = simulate_collective(c, NetworkMode::flow, call, false);
    CHECK(fold.folded == pxn);
    CHECK(fold.duration() == full.duration());
  }
}

TEST_CASE("fabric errors name the key, the value and the choices") {
  auto with = [](json fabric) {
    return json{{"preset", "dgx-h100"}, {"nodes", 4}, {"inter_node", {{"fabric", fabric}}}};
  };
  CHECK(error_where(with({{"kind", "torus"}})) == "cluster.inter_node.fabric.kind");
  CHECK(error_text(with({{"kind", "torus"}})).find("single_switch, fat_tree") != std::string::npos);
  CHECK(error_where(with({{"kind", "fat_tree"}})) == "cluster.inter_node.fabric.nodes_per_leaf");
  CHECK(error_where(with({{"nodes_per_leaf", 2}})) == "cluster.inter_node.fabric.kind");
  CHECK(error_text(with({{"nodes_per_leaf", 2}})).find("single_switch, fat_tree") != std::string::npos);
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 0}})) ==
        "cluster.inter_node.fabric.nodes_per_leaf");
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"oversubscription", 0.5}})) ==
        "cluster.inter_node.fabric.oversubscription");
  CHECK(error_text(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"oversubscription", 0.5}}))
            .find("0.5") != std::string::npos);
  CHECK(error_where(with({{"kind", "single_switch"}, {"nodes_per_leaf", 2}})) ==
        "cluster.inter_node.fabric.nodes_per_leaf");
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"spines", 2}})) ==
        "cluster.inter_node.fabric.spines");
  CHECK(error_where(with("fat_tree")) == "cluster.inter_node.fabric");
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}})).empty());
  // SHARP: a boolean, on the single switch only.
  CHECK(error_where(with({{"kind", "single_switch"}, {"sharp", "yes"}})) == "cluster.inter_node.fabric.sharp");
  CHECK(error_text(with({{"kind", "single_switch"}, {"sharp", "yes"}})).find("true or false") != std::string::npos);
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"sharp", true}})) ==
        "cluster.inter_node.fabric.sharp");
  CHECK(error_where(with({{"kind", "single_switch"}, {"sharp", true}})).empty());
  CHECK(parse_cluster(with({{"kind", "single_switch"}, {"sharp", true}}), "cluster").inter_node.fabric.sharp);
  CHECK_FALSE(preset_cluster("dgx-h100", 4).inter_node.fabric.sharp);
  // Rail-optimized: nodes_per_leaf is the group; pxn, a boolean, on by default and for it alone.
  CHECK(error_text(with({{"kind", "torus"}})).find("rail_optimized") != std::string::npos);
  CHECK(error_where(with({{"kind", "rail_optimized"}})) == "cluster.inter_node.fabric.nodes_per_leaf");
  const auto rails = parse_cluster(with({{"kind", "rail_optimized"}, {"nodes_per_leaf", 2}}), "cluster");
  CHECK(rails.inter_node.fabric.kind == spsim::sim::FabricKind::rail_optimized);
  CHECK(rails.inter_node.fabric.pxn);
  CHECK_FALSE(parse_cluster(with({{"kind", "rail_optimized"}, {"nodes_per_leaf", 2}, {"pxn", false}}), "cluster")
                  .inter_node.fabric.pxn);
  CHECK(error_where(with({{"kind", "rail_optimized"}, {"nodes_per_leaf", 2}, {"pxn", 1}})) ==
        "cluster.inter_node.fabric.pxn");
  CHECK(error_where(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"pxn", false}})) ==
        "cluster.inter_node.fabric.pxn");
  CHECK(error_text(with({{"kind", "fat_tree"}, {"nodes_per_leaf", 2}, {"pxn", false}})).find("rail_optimized") !=
        std::string::npos);
  CHECK(error_where(with({{"kind", "rail_optimized"}, {"nodes_per_leaf", 2}, {"sharp", true}})) ==
        "cluster.inter_node.fabric.sharp");
  CHECK(spsim::sim::describe_fabric(rails.inter_node.fabric) == "rail_optimized, 2 nodes per group, full bisection");
}

TEST_CASE("the estimates (tuner, closed forms) see a fat tree's uplinks as the flow model does") {
  // Ring all-gather and direct all-to-all across 2 leaves at 4:1 (tests above): the estimate of the
  // algorithm the simulation runs matches the simulated time within 1%; under one leaf nothing changes.
  using spsim::rt::CommKind;
  for (auto [kind, algo] :
       {std::pair{CommKind::all_gather, "ring"}, std::pair{CommKind::all_to_all, "direct"}}) {
    CAPTURE(algo);
    for (double over : {1.0, 4.0}) {
      CAPTURE(over);
      const Cluster c(parse_cluster(fat_tree(4, 2, over), "cluster"));
      Engine engine;
      const auto network = make_network(NetworkMode::flow, engine, c);
      const Collectives collectives(*network);
      const CollectiveCall call{kind, c.gpus(), 1024.0 * 1024 * 1024, algo, Protocol::simple, 1};
      const double estimate = collectives.choose(call).predicted_s;
      CHECK(estimate == doctest::Approx(simulate_collective(c, NetworkMode::flow, call).duration().seconds())
                            .epsilon(0.01));
    }
  }
  // Pairwise exchange pays the uplinks step by step (at step s, min(s, 32 - s) of a leaf's 16 ranks
  // leave it; more than 4 exceed 190 GB/s), so the tuner prefers posting every message at once.
  const Cluster c(parse_cluster(fat_tree(4, 2, 4), "cluster"));
  Engine engine;
  const auto network = make_network(NetworkMode::flow, engine, c);
  const Collectives collectives(*network);
  CHECK(collectives.choose({CommKind::all_to_all, c.gpus(), 256.0 * 1024 * 1024, "auto", std::nullopt, 1})
            .algorithm == "direct");
}

TEST_CASE("SHARP on an explicit topology is refused at the key") {
  const json topology = {{"devices",
                          {{{"id", "g0"}, {"kind", "gpu"}, {"node", 0}},
                           {{"id", "g1"}, {"kind", "gpu"}, {"node", 1}},
                           {{"id", "sw"}, {"kind", "switch"}}}},
                         {"links",
                          {{{"from", "g0"}, {"to", "sw"}, {"bandwidth_GBps", 50}, {"class", "network"}},
                           {{"from", "g1"}, {"to", "sw"}, {"bandwidth_GBps", 50}, {"class", "network"}}}}};
  json section = {{"gpu", "h100-sxm5-80gb"}, {"topology", topology}};
  CHECK(error_where(section).empty());
  section["inter_node"] = {{"fabric", {{"kind", "single_switch"}, {"sharp", true}}}};
  CHECK(error_where(section) == "cluster.inter_node.fabric.sharp");
  CHECK(error_text(section).find("topology") != std::string::npos);
}
