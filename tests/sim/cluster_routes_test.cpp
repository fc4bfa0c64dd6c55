// Routes of sim::Cluster: every route is a chain of links from source to destination that forwards
// through no GPU and is shortest in (latency, hops), as a plain Dijkstra written out here finds; and a
// route does not depend on the order the routes are asked for (a source that asks for a few
// destinations gets them from stopped searches, one that asks for all from its whole tree).
#include "sim/cluster/cluster.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/sim/topologies.hpp"

using spsim::sim::Cluster;
using spsim::sim::ClusterConfig;
using spsim::sim::DeviceId;
using spsim::sim::DeviceKind;
using spsim::sim::LinkId;
using spsim::sim::testing::preset_cluster;

namespace {

using Distance = std::pair<std::int64_t, int>;  // (latency in ps, hops)

// Distances from `src` over the cluster's links by repeated selection of the nearest unsettled
// device (O(V²)), with GPUs other than the source not forwarding.
std::vector<Distance> reference_distances(const Cluster& c, DeviceId src) {
  const std::size_t n = c.num_devices();
  constexpr Distance kFar{std::numeric_limits<std::int64_t>::max(), 0};
  std::vector<Distance> dist(n, kFar);
  std::vector<bool> done(n, false);
  std::vector<std::vector<LinkId>> out(n);
  for (std::size_t l = 0; l < c.num_links(); ++l)
    out[static_cast<std::size_t>(c.link(static_cast<LinkId>(l)).from)].push_back(static_cast<LinkId>(l));
  dist[static_cast<std::size_t>(src)] = {0, 0};
  while (true) {
    std::size_t u = n;
    for (std::size_t v = 0; v < n; ++v)
      if (!done[v] && dist[v] != kFar && (u == n || dist[v] < dist[u])) u = v;
    if (u == n) break;
    done[u] = true;
    if (static_cast<DeviceId>(u) != src && c.device(static_cast<DeviceId>(u)).kind == DeviceKind::gpu) continue;
    for (LinkId l : out[u]) {
      const auto& link = c.link(l);
      const Distance cand{dist[u].first + link.latency.count_ps(), dist[u].second + 1};
      if (cand < dist[static_cast<std::size_t>(link.to)]) dist[static_cast<std::size_t>(link.to)] = cand;
    }
  }
  return dist;
}

// The route's links as a list, after checking it is a chain from src to dst through no other GPU.
std::vector<LinkId> checked_route(const Cluster& c, DeviceId src, DeviceId dst) {
  const auto& route = c.route(src, dst);
  DeviceId at = src;
  for (LinkId l : route.links) {
    REQUIRE(c.link(l).from == at);
    if (at != src) CHECK(c.device(at).kind != DeviceKind::gpu);
    at = c.link(l).to;
  }
  CHECK(at == dst);
  return route.links;
}

}  // namespace

TEST_CASE("routes are shortest, forward through no GPU, and do not depend on the order they are asked for") {
  // Three nodes on two leaves of a fat tree (NVSwitch inside, NIC per GPU, leaves meeting at a spine).
  ClusterConfig config = preset_cluster("dgx-h100", 3);
  config.inter_node.fabric.kind = spsim::sim::FabricKind::fat_tree;
  config.inter_node.fabric.nodes_per_leaf = 2;
  const Cluster few(config), all(config);
  const auto& gpus = few.gpus();
  // `few`: each GPU asks for two destinations (stopped searches); `all`: each asks for every one, so
  // its searches soon settle as many devices as its tree holds and it gets the whole tree.
  std::vector<std::vector<std::vector<LinkId>>> from_few(gpus.size(), std::vector<std::vector<LinkId>>(gpus.size()));
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j : {(i + 1) % gpus.size(), (i + 9) % gpus.size()})
      from_few[i][j] = checked_route(few, gpus[i], gpus[j]);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto dist = reference_distances(all, gpus[i]);
    for (std::size_t j = 0; j < gpus.size(); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      const auto links = checked_route(all, gpus[i], gpus[j]);
      Distance got{0, static_cast<int>(links.size())};
      for (LinkId l : links) got.first += all.link(l).latency.count_ps();
      CHECK(got == dist[static_cast<std::size_t>(gpus[j])]);
      if (!from_few[i][j].empty() || i == j) CHECK(links == from_few[i][j]);
    }
  }
}

TEST_CASE("a route does not pass through a GPU even where that would be shorter") {
  // g0 reaches g1 over a fast direct link and the switch over a slow one; the others reach the switch
  // fast. Through g1 the way from g0 to g2 would take 1 + 1 + 1 µs; GPUs do not forward, so it takes
  // the slow link: 10 + 1 µs.
  ClusterConfig config = spsim::sim::testing::star_cluster(8, 10e9, spsim::sim::Time::from_us(1));
  auto& t = *config.topology;
  t.links[0].spec.latency = spsim::sim::Time::from_us(10);  // g0 - sw
  const spsim::sim::LinkSpec fast = t.links[1].spec;
  t.links.push_back({"g0", "g1", fast, true});
  for (const bool whole_tree : {false, true}) {
    CAPTURE(whole_tree);
    const Cluster c(config);
    const auto& gpus = c.gpus();
    // Asked last, after the other destinations, g2's route comes from g0's whole tree (its stopped
    // searches have settled more devices than the cluster has by then); asked first, from a search.
    if (whole_tree)
      for (std::size_t d = 3; d < gpus.size(); ++d) (void)c.route(gpus[0], gpus[d]);
    const auto links = checked_route(c, gpus[0], gpus[2]);
    CHECK(links.size() == 2);
    CHECK(c.route(gpus[0], gpus[2]).latency == spsim::sim::Time::from_us(11));
    CHECK(checked_route(c, gpus[0], gpus[1]).size() == 1);  // the direct link
  }
}

namespace {

// The devices a route visits after its source, by name.
std::vector<std::string> hops(const Cluster& c, const std::string& src, const std::string& dst) {
  std::vector<std::string> out;
  for (LinkId l : c.route(*c.find_device(src), *c.find_device(dst)).links) out.push_back(c.device(c.link(l).to).name);
  return out;
}

ClusterConfig rail_cluster(int nodes, int nodes_per_group, double oversubscription, bool pxn) {
  ClusterConfig config = preset_cluster("dgx-h100", nodes);
  config.inter_node.fabric.kind = spsim::sim::FabricKind::rail_optimized;
  config.inter_node.fabric.nodes_per_leaf = nodes_per_group;
  config.inter_node.fabric.oversubscription = oversubscription;
  config.inter_node.fabric.pxn = pxn;
  return config;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("a rail-optimized fabric puts NIC c of each node of a group on the group's leaf c") {
  const Cluster c(rail_cluster(4, 2, 4, true));
  // Same rail, same group: one leaf. Same rail, other group: up to the spine and down the rail's leaf.
  CHECK(hops(c, "n0.gpu3", "n1.gpu3") == Names{"n0.nic3", "leaf0.rail3", "n1.nic3", "n1.gpu3"});
  CHECK(hops(c, "n0.gpu3", "n2.gpu3") ==
        Names{"n0.nic3", "leaf0.rail3", "spine", "leaf1.rail3", "n2.nic3", "n2.gpu3"});
  // PXN: another rail is reached through the GPU of the source's node on that rail, over NVLink.
  CHECK(hops(c, "n0.gpu1", "n1.gpu3") ==
        Names{"n0.nvswitch", "n0.gpu3", "n0.nic3", "leaf0.rail3", "n1.nic3", "n1.gpu3"});
  // Inside a node nothing changes.
  CHECK(hops(c, "n0.gpu1", "n0.gpu3") == Names{"n0.nvswitch", "n0.gpu3"});
  // A leaf's uplinks: its 2 NIC ports at the link's line rate over the oversubscription, at the link's
  // efficiency.
  const auto& up = c.link(c.route(*c.find_device("leaf0.rail3"), *c.find_device("spine")).links.at(0));
  const auto& nic = c.link(c.route(*c.find_device("n0.nic3"), *c.find_device("leaf0.rail3")).links.at(0));
  CHECK(up.capacity_Bps == doctest::Approx(2 * nic.capacity_Bps / 4).epsilon(1e-12));
}

TEST_CASE("without PXN a rail-optimized fabric's cross-rail messages cross the spine") {
  const Cluster c(rail_cluster(2, 2, 1, false));
  CHECK(hops(c, "n0.gpu1", "n1.gpu3") ==
        Names{"n0.nic1", "leaf0.rail1", "spine", "leaf0.rail3", "n1.nic3", "n1.gpu3"});
}
