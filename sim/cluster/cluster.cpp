// Cluster: builds the Boost.Graph from a ClusterConfig and answers cached shortest-route queries.
#include "sim/cluster/cluster.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace spsim::sim {

namespace {

// Vertices are DeviceIds; each edge carries its LinkId.
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_index_t, LinkId>>;

LinkClass slower_class(LinkClass a, LinkClass b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace

struct Cluster::Impl {
  ClusterConfig config;
  Graph graph;
  std::vector<Device> devices;
  std::vector<Link> links;
  std::vector<DeviceId> gpus;
  std::map<std::string, DeviceId> by_name;
  int nodes = 1;
  // Scratch of search(), per device: the best (latency, hops) found and the link it came by; reset
  // after each search on the devices it touched.
  mutable std::vector<std::pair<std::int64_t, int>> best;
  mutable std::vector<LinkId> pred;
  mutable std::vector<DeviceId> touched;
  // Per source: the work its stopped searches have done so far (search()'s count), and, once that
  // reaches a whole tree's, its whole shortest-path tree (the link that reaches each device; -1: none).
  mutable std::vector<std::size_t> searched;
  mutable std::vector<std::vector<LinkId>> tree;
  // Per source: the routes used so far, by destination (sorted). A source reaches a few destinations
  // (its ring neighbours, its collectives' peers), so a row holds those, not one slot per device: a
  // row per device for 8,192 GPUs was a gigabyte of empty slots.
  mutable std::vector<std::vector<std::pair<DeviceId, std::unique_ptr<Route>>>> routes;
  // Per node: its NVLS switch, if it has one every GPU of the node reaches in one link (filled on
  // the first nvls_switch() query, for every node in one pass).
  mutable std::vector<std::optional<DeviceId>> nvls_switches;
  mutable bool nvls_known = false;

  DeviceId add_device(Device d) {
    const auto id = static_cast<DeviceId>(boost::add_vertex(graph));
    by_name[d.name] = id;
    if (d.kind == DeviceKind::gpu) gpus.push_back(id);
    devices.push_back(std::move(d));
    return id;
  }
  void add_link(DeviceId from, DeviceId to, const LinkSpec& spec, bool duplex) {
    for (int dir = 0; dir < (duplex ? 2 : 1); ++dir) {
      const auto id = static_cast<LinkId>(links.size());
      const DeviceId a = dir == 0 ? from : to, b = dir == 0 ? to : from;
      links.push_back(Link{a, b, spec.effective_Bps(), spec.latency, spec.link_class});
      boost::add_edge(static_cast<std::size_t>(a), static_cast<std::size_t>(b), id, graph);
    }
  }
  void build_presets();
  void build_explicit(const ExplicitTopology& t);
  // Dijkstra from src into the scratch; it stops once `stop` is settled (-1: never). Returns whether
  // `stop` was, and counts its work: the devices settled and the links looked along.
  bool search(DeviceId src, DeviceId stop, std::size_t& settled) const;
  [[nodiscard]] bool dead_end(DeviceId v, DeviceId u, DeviceId stop) const;
  void reset_scratch() const;
  // The links of the shortest path from src to dst (src != dst), in order.
  std::vector<LinkId> path_to(DeviceId src, DeviceId dst) const;
  // Rail-optimized fabric with PXN, NVSwitch nodes, src and dst GPUs of different nodes and rails: the
  // GPU of src's node on dst's rail, which the message crosses NVLink to and leaves the node from
  // (NCCL's PXN).
  [[nodiscard]] std::optional<DeviceId> pxn_proxy(DeviceId src, DeviceId dst) const {
    const FabricConfig& fab = config.inter_node.fabric;
    if (config.topology || fab.kind != FabricKind::rail_optimized || !fab.pxn ||
        config.intra_node.fabric != IntraFabric::nvswitch)  // PXN's first hop is NVLink
      return std::nullopt;
    const Device& a = devices[static_cast<std::size_t>(src)];
    const Device& b = devices[static_cast<std::size_t>(dst)];
    if (a.kind != DeviceKind::gpu || b.kind != DeviceKind::gpu || a.node == b.node ||
        a.local_index == b.local_index)
      return std::nullopt;
    return by_name.at("n" + std::to_string(a.node) + ".gpu" + std::to_string(b.local_index));
  }
};

void Cluster::Impl::build_presets() {
  nodes = config.nodes;
  const auto& intra = config.intra_node;
  const bool multi = nodes > 1;
  const FabricConfig& fab = config.inter_node.fabric;
  const bool single = fab.kind == FabricKind::single_switch;
  const DeviceId fabric =
      multi && single ? add_device({"fabric", DeviceKind::network_switch, -1, 0, false}) : DeviceId{-1};
  // A fat tree: a leaf switch per group of nodes and, with two or more, one spine their uplinks meet at.
  // Rail-optimized: a leaf per rail (NIC index) of each group, leaves[group * rails + rail], and a spine
  // once there are two leaves; the group's uplinks are split evenly over its rail leaves.
  const int groups = multi ? fab.groups(nodes) : 0;
  const bool rails = fab.kind == FabricKind::rail_optimized;
  const int per_group = rails ? config.gpus_per_node : 1;
  std::vector<DeviceId> leaves;
  if (multi && !single) {
    const int n_leaves = groups * per_group;
    const DeviceId spine =
        n_leaves > 1 ? add_device({"spine", DeviceKind::network_switch, -1, 0, false}) : DeviceId{-1};
    LinkSpec uplink = config.inter_node.link;
    uplink.name += " uplinks";
    uplink.bandwidth_Bps = leaf_uplink_line_Bps(config) / per_group;
    for (int g = 0; g < groups; ++g)
      for (int rail = 0; rail < per_group; ++rail) {
        std::string name = "leaf" + std::to_string(g);
        if (rails) name += ".rail" + std::to_string(rail);
        leaves.push_back(add_device({name, DeviceKind::network_switch, -1, 0, false}));
        if (n_leaves > 1) add_link(leaves.back(), spine, uplink, true);
      }
  }
  for (int n = 0; n < nodes; ++n) {
    std::string prefix = std::to_string(n);  // "n<node>." (built in place: GCC 12 -Wrestrict false positive)
    prefix.insert(prefix.begin(), 'n');
    prefix.push_back('.');
    const bool nvswitch = intra.fabric == IntraFabric::nvswitch;
    const DeviceId sw =
        add_device({prefix + (nvswitch ? "nvswitch" : "pcie_switch"),
                    nvswitch ? DeviceKind::nvswitch : DeviceKind::pcie_switch, n, 0, intra.nvls});
    for (int g = 0; g < config.gpus_per_node; ++g) {
      const DeviceId gpu = add_device({prefix + "gpu" + std::to_string(g), DeviceKind::gpu, n, g, false});
      add_link(gpu, sw, intra.link, true);
      if (!multi) continue;
      const DeviceId nic = add_device({prefix + "nic" + std::to_string(g), DeviceKind::nic, n, g, false});
      add_link(gpu, nic, config.inter_node.nic_attach, true);
      const DeviceId sw_of_nic =
          single ? fabric : leaves[static_cast<std::size_t>(fab.leaf_of(n) * per_group + (rails ? g : 0))];
      add_link(nic, sw_of_nic, config.inter_node.link, true);
    }
  }
}

void Cluster::Impl::build_explicit(const ExplicitTopology& t) {
  std::map<int, int> per_node;
  int max_node = 0;
  for (const auto& d : t.devices) {
    const int local = d.kind == DeviceKind::gpu ? per_node[d.node]++ : 0;
    add_device({d.id, d.kind, d.node, local, d.nvls});
    max_node = std::max(max_node, d.node);
  }
  for (const auto& l : t.links) add_link(by_name.at(l.from), by_name.at(l.to), l.spec, l.duplex);
  nodes = max_node + 1;
}

// Dijkstra on (latency, hops), ties broken by device id so routes are deterministic.
bool Cluster::Impl::search(DeviceId src, DeviceId stop, std::size_t& settled) const {
  const std::size_t n = devices.size();
  constexpr std::pair<std::int64_t, int> kUnreached{std::numeric_limits<std::int64_t>::max(), 0};
  if (best.size() != n) {
    best.assign(n, kUnreached);
    pred.assign(n, -1);
  }
  auto reach = [&](DeviceId v, std::pair<std::int64_t, int> b, LinkId l) {
    if (best[static_cast<std::size_t>(v)] == kUnreached) touched.push_back(v);
    best[static_cast<std::size_t>(v)] = b;
    pred[static_cast<std::size_t>(v)] = l;
  };
  using Key = std::tuple<std::int64_t, int, DeviceId>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap;
  reach(src, {0, 0}, -1);
  heap.emplace(0, 0, src);
  const auto index = boost::get(boost::edge_index, graph);
  while (!heap.empty()) {
    const auto [lat, hops, u] = heap.top();
    heap.pop();
    if (std::pair{lat, hops} != best[static_cast<std::size_t>(u)]) continue;
    ++settled;
    if (u == stop) return true;
    if (u != src && devices[static_cast<std::size_t>(u)].kind == DeviceKind::gpu) continue;  // no forwarding
    for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(u), graph); e != end; ++e) {
      const LinkId l = index[*e];
      const auto v = static_cast<DeviceId>(boost::target(*e, graph));
      ++settled;  // the work, counted against a whole tree's
      if (stop >= 0 && dead_end(v, u, stop)) continue;
      const std::pair<std::int64_t, int> cand{lat + links[static_cast<std::size_t>(l)].latency.count_ps(),
                                              hops + 1};
      if (cand < best[static_cast<std::size_t>(v)]) {
        reach(v, cand, l);
        heap.emplace(cand.first, cand.second, v);
      }
    }
  }
  return false;
}

// Whether a search for `stop` may leave v, entered from u, out: v is not `stop` and leads only back to
// u or to GPUs other than `stop` (a GPU forwards nothing), so no path to `stop` runs through it. A
// search for one device then steps over the rest of a fabric's NICs and GPUs and the NVSwitches of
// other nodes instead of settling them; the path it finds is the same, since the devices it leaves
// out lie on no path to `stop` and change the distance of no device that does.
bool Cluster::Impl::dead_end(DeviceId v, DeviceId u, DeviceId stop) const {
  if (v == stop) return false;
  if (devices[static_cast<std::size_t>(v)].kind == DeviceKind::gpu) return true;
  for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(v), graph); e != end; ++e) {
    const auto w = static_cast<DeviceId>(boost::target(*e, graph));
    if (w == stop || (w != u && devices[static_cast<std::size_t>(w)].kind != DeviceKind::gpu)) return false;
  }
  return true;
}

void Cluster::Impl::reset_scratch() const {
  for (DeviceId v : touched) {
    best[static_cast<std::size_t>(v)] = {std::numeric_limits<std::int64_t>::max(), 0};
    pred[static_cast<std::size_t>(v)] = -1;
  }
  touched.clear();
}

// A search that stops once dst is settled finds the path the whole tree holds: a settled device's
// predecessor is final, and the search pops devices in the same order whether it stops or runs on
// (the dead ends it leaves out lie on no path to dst). A source's few destinations (its node's GPUs,
// its ring neighbour) settle long before the far end of a large fabric, so most sources never need a
// tree of every device; one that keeps asking (an all-to-all's) gets its whole tree once its stopped
// searches have done a tree's work (a pop per device and a look along each link), which bounds the
// work at twice the trees'.
std::vector<LinkId> Cluster::Impl::path_to(DeviceId src, DeviceId dst) const {
  const auto s = static_cast<std::size_t>(src);
  if (tree[s].empty() && searched[s] >= devices.size() + links.size()) {
    std::size_t settled = 0;
    search(src, -1, settled);
    tree[s] = pred;
    reset_scratch();
  }
  std::vector<LinkId> path;
  auto walk = [&](const std::vector<LinkId>& p) {
    for (DeviceId v = dst; v != src;) {
      const LinkId l = p[static_cast<std::size_t>(v)];
      if (l < 0) return false;
      path.push_back(l);
      v = links[static_cast<std::size_t>(l)].from;
    }
    return true;
  };
  bool found = false;
  if (!tree[s].empty()) {
    found = walk(tree[s]);
  } else {
    found = search(src, dst, searched[s]) && walk(pred);
    reset_scratch();
  }
  if (!found)
    throw std::logic_error("Cluster::route: " + devices[static_cast<std::size_t>(dst)].name + " unreachable from " +
                           devices[s].name);
  std::reverse(path.begin(), path.end());
  return path;
}

Cluster::Cluster(ClusterConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  if (impl_->config.topology)
    impl_->build_explicit(*impl_->config.topology);
  else
    impl_->build_presets();
  impl_->routes.resize(impl_->devices.size());
  impl_->searched.resize(impl_->devices.size());
  impl_->tree.resize(impl_->devices.size());
}

Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

const ClusterConfig& Cluster::config() const {
  return impl_->config;
}
std::size_t Cluster::num_devices() const {
  return impl_->devices.size();
}
std::size_t Cluster::num_links() const {
  return impl_->links.size();
}
const Device& Cluster::device(DeviceId d) const {
  return impl_->devices.at(static_cast<std::size_t>(d));
}
const Link& Cluster::link(LinkId l) const {
  return impl_->links[static_cast<std::size_t>(l)];
}
const std::vector<DeviceId>& Cluster::gpus() const {
  return impl_->gpus;
}
int Cluster::num_nodes() const {
  return impl_->nodes;
}

std::optional<DeviceId> Cluster::find_device(const std::string& name) const {
  const auto it = impl_->by_name.find(name);
  if (it == impl_->by_name.end()) return std::nullopt;
  return it->second;
}

std::optional<DeviceId> Cluster::nvls_switch(int node) const {
  auto& found = impl_->nvls_switches;
  if (!impl_->nvls_known) {
    impl_->nvls_known = true;
    found.assign(static_cast<std::size_t>(std::max(impl_->nodes, 1)), std::nullopt);
    for (std::size_t d = 0; d < impl_->devices.size(); ++d) {
      const auto& dev = impl_->devices[d];
      if (dev.kind == DeviceKind::nvswitch && dev.nvls && dev.node >= 0 && dev.node < impl_->nodes)
        found[static_cast<std::size_t>(dev.node)] = static_cast<DeviceId>(d);
    }
    // The switch must be one link from every GPU of its node. A preset links each GPU to its node's
    // switch and GPUs do not forward, so only an explicit topology needs the routes.
    if (impl_->config.topology)
      for (DeviceId g : impl_->gpus) {
        auto& sw = found[static_cast<std::size_t>(device(g).node)];
        if (sw && route(g, *sw).links.size() != 1) sw = std::nullopt;
      }
  }
  if (node < 0 || static_cast<std::size_t>(node) >= found.size()) return std::nullopt;
  return found[static_cast<std::size_t>(node)];
}

const Route& Cluster::route(DeviceId src, DeviceId dst) const {
  auto& row = impl_->routes[static_cast<std::size_t>(src)];
  const auto at = std::lower_bound(row.begin(), row.end(), dst,
                                   [](const auto& entry, DeviceId d) { return entry.first < d; });
  if (at != row.end() && at->first == dst) return *at->second;
  Route r;
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  if (src != dst) {
    if (const auto proxy = impl_->pxn_proxy(src, dst)) {
      r.links = impl_->path_to(src, *proxy);
      const auto rest = impl_->path_to(*proxy, dst);
      r.links.insert(r.links.end(), rest.begin(), rest.end());
    } else {
      r.links = impl_->path_to(src, dst);
    }
    for (LinkId l : r.links) {
      const auto& link = impl_->links[static_cast<std::size_t>(l)];
      r.latency += link.latency;
      r.bottleneck_Bps = std::min(r.bottleneck_Bps, link.capacity_Bps);
      r.link_class = slower_class(r.link_class, link.link_class);
    }
  }
  return *row.emplace(at, dst, std::make_unique<Route>(std::move(r)))->second;
}

}  // namespace spsim::sim
