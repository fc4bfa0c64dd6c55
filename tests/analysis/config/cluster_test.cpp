// Tests of cluster presets, routing and parse_cluster's validation.
#include "analysis/config/cluster.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "analysis/config/document.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"

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
  CHECK(presets == std::vector<std::string>{"dgx-a100", "dgx-b200", "dgx-h100", "gb200-nvl72", "hgx-h200",
                                            "hgx-h800", "pcie-a100-4"});
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
