// parse_cluster: preset merge, link/GPU lookup and validation of the `cluster` config section, with the
// protocol tuning and measured collective fits it may carry.
#include "analysis/config/cluster.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/config/document.hpp"
#include "analysis/config/files.hpp"
#include "analysis/config/hardware.hpp"
#include "analysis/config/json_fields.hpp"
#include "runtime/core/error.hpp"

namespace spsim::analysis {

using namespace sim;
using fields::check_keys;
using fields::get_bool;
using fields::get_latency_us;
using fields::get_nonnegative;
using fields::get_positive_int;
using fields::get_string;
using fields::join_path;
using fields::require_object;

namespace {

// Cluster sizes the simulator builds in seconds and a few GB (8 GPUs per node: 524,288 GPUs); a rack-scale
// NVLink domain is a node of up to 576 GPUs.
constexpr int kMaxNodes = 65536;
constexpr int kMaxGpusPerNode = 576;

void apply_entry(ProtocolTable::Entry& e, const nlohmann::json& j, const std::string& path, bool ll) {
  std::vector<std::string_view> keys = {"base_latency_us", "tree_base_latency_us", "nvlink_step_latency_us",
                                        "pcie_step_latency_us", "network_step_latency_us"};
  if (ll) keys.push_back("max_busbw_GBps");
  check_keys(j, path, keys);
  auto set = [&](const char* key, Time& out) {
    if (j.contains(key)) out = Time::from_us(get_latency_us(j, path, key));
  };
  set("base_latency_us", e.ring_base_latency);
  set("tree_base_latency_us", e.tree_base_latency);
  set("nvlink_step_latency_us", e.step_latency[0]);
  set("pcie_step_latency_us", e.step_latency[1]);
  set("network_step_latency_us", e.step_latency[2]);
}

// tuning.<name> = {"efficiency": f}, f a fraction of the bandwidth in [0, 1] (tree, collnet).
void apply_efficiency(const nlohmann::json& tuning, const std::string& path, const char* name, double& out) {
  if (!tuning.contains(name)) return;
  const auto& j = tuning.at(name);
  const std::string p = join_path(path, name);
  check_keys(j, p, {"efficiency"});
  if (!j.contains("efficiency")) return;
  out = get_nonnegative(j, p, "efficiency", true);
  if (out > 1) throw InputError(join_path(p, "efficiency"), "a fraction of the bandwidth, at most 1");
}

void apply_tuning(ProtocolTable& table, const nlohmann::json& tuning, const std::string& path) {
  check_keys(tuning, path, {"simple", "ll", "ll128", "nvls", "tree", "collnet", "channels", "source"});
  for (int p = 0; p < kProtocols; ++p) {
    const char* name = protocol_name(static_cast<Protocol>(p));
    if (tuning.contains(name))
      apply_entry(table.protocols[static_cast<std::size_t>(p)], tuning.at(name), join_path(path, name),
                  static_cast<Protocol>(p) == Protocol::ll);
  }
  // LL's bus-bandwidth cap by node count (1, 2, more), GB/s (sim/collectives/protocol.hpp).
  if (tuning.contains("ll") && tuning.at("ll").contains("max_busbw_GBps")) {
    const std::string p = join_path(join_path(path, "ll"), "max_busbw_GBps");
    const auto& caps = tuning.at("ll").at("max_busbw_GBps");
    if (!caps.is_array() || caps.size() != 3)
      throw InputError(p, "expected three bus bandwidths in GB/s: one node, two nodes, more");
    for (std::size_t i = 0; i < 3; ++i) {
      if (!caps[i].is_number() || !(caps[i].get<double>() > 0) || caps[i].get<double>() > 1e6)
        throw InputError(p + "[" + std::to_string(i) + "]", "expected a bandwidth in (0, 1e6] GB/s");
      table.ll_max_busbw_Bps[i] = caps[i].get<double>() * 1e9;
    }
  }
  if (tuning.contains("nvls")) {
    const auto& j = tuning.at("nvls");
    const std::string np = join_path(path, "nvls");
    check_keys(j, np,
               {"nvlink_latency_us", "network_latency_us", "efficiency", "channels", "max_chunk_KiB",
                "peer_sync_us", "channel_GBps"});
    if (j.contains("nvlink_latency_us"))
      table.nvls_latency[0] = Time::from_us(get_latency_us(j, np, "nvlink_latency_us"));
    if (j.contains("network_latency_us"))
      table.nvls_latency[1] = Time::from_us(get_latency_us(j, np, "network_latency_us"));
    if (j.contains("efficiency")) table.nvls_efficiency = get_nonnegative(j, np, "efficiency", true);
    // The one-node channel pipeline (sim/collectives/nvls.cpp): channels, peer_sync_us and channel_GBps
    // together; max_chunk_KiB defaults to NCCL's 128.
    const bool any = j.contains("channels") || j.contains("peer_sync_us") || j.contains("channel_GBps") ||
                     j.contains("max_chunk_KiB");
    if (any) {
      for (const char* key : {"channels", "peer_sync_us", "channel_GBps"})
        if (!j.contains(key))
          throw InputError(join_path(np, key),
                           "missing: the NVLS channel pipeline needs channels, peer_sync_us and channel_GBps "
                           "together (max_chunk_KiB is optional, default 128)");
      auto& pipe = table.nvls_pipeline;
      pipe.channels = get_positive_int(j, np, "channels", 1024);
      pipe.peer_sync = Time::from_us(get_latency_us(j, np, "peer_sync_us"));
      const double rate = get_nonnegative(j, np, "channel_GBps", true);
      if (rate > 1e6) throw InputError(join_path(np, "channel_GBps"), "expected a bandwidth in (0, 1e6] GB/s");
      pipe.channel_Bps = rate * 1e9;
      // NCCL_NVLS_CHUNKSIZE: whole KiB, at least NCCL's smallest chunk (16 KiB).
      const int chunk = j.contains("max_chunk_KiB") ? get_positive_int(j, np, "max_chunk_KiB", 1024 * 1024) : 128;
      if (chunk < 16)
        throw InputError(join_path(np, "max_chunk_KiB"),
                         "expected whole KiB from 16 (NCCL's smallest NVLS chunk) up, got " + std::to_string(chunk));
      pipe.max_chunk_bytes = chunk * 1024.0;
    }
  }
  apply_efficiency(tuning, path, "tree", table.tree_efficiency);
  apply_efficiency(tuning, path, "collnet", table.collnet_efficiency);
  if (tuning.contains("channels")) {
    const auto& j = tuning.at("channels");
    const std::string cp = join_path(path, "channels");
    if (!j.is_object())
      throw InputError(cp, "expected {\"count\": N, \"source\": \"...\"}, got " + j.dump());
    check_keys(j, cp, {"count", "source"});
    const auto& n = j.contains("count") ? j.at("count") : nlohmann::json();
    if (!n.is_number_integer() || n.get<std::int64_t>() < 1 || n.get<std::int64_t>() > 1024)
      throw InputError(join_path(cp, "count"),
                       "expected the number of channels NCCL builds per GPU, an integer in [1, 1024], got " +
                           (n.is_null() ? std::string("nothing") : n.dump()));
    table.channels = static_cast<int>(n.get<std::int64_t>());
    if (!j.contains("source"))
      throw InputError(join_path(cp, "source"), "missing: say where the channel count comes from (an NCCL log)");
    table.channels_source = get_string(j, cp, "source");
  }
  if (tuning.contains("source")) table.source = get_string(tuning, path, "source");
}

const std::vector<std::string_view> kClusterKeys = {
    "preset",     "description", "gpu",    "gpus_per_node", "nodes",
    "intra_node", "inter_node",  "tuning", "topology",      "collective_fits"};

CollectiveFits parse_collective_fits(const nlohmann::json& j, const std::string& path) {
  require_object(j, path);
  CollectiveFits fits;
  for (const auto& [name, entry] : j.items()) {
    const auto kind = rt::parse_collective_op(name);
    if (!kind)
      throw InputError(join_path(path, name), std::string("unknown collective '") + name +
                                                  "'; valid choices: " + rt::collective_op_choices());
    const std::string p = join_path(path, name);
    check_keys(entry, p, {"latency_us", "busbw_GBps", "ranks", "source", "residual"});
    CollectiveFit fit;
    fit.latency = Time::from_us(get_latency_us(entry, p, "latency_us"));
    fit.busbw_Bps = get_nonnegative(entry, p, "busbw_GBps", true) * 1e9;
    fit.ranks = get_positive_int(entry, p, "ranks");
    if (entry.contains("source")) fit.source = get_string(entry, p, "source");
    if (entry.contains("residual")) fit.residual = get_nonnegative(entry, p, "residual");
    fits[static_cast<std::size_t>(*kind)] = std::move(fit);
  }
  return fits;
}

std::optional<DeviceKind> parse_device_kind(const std::string& s) {
  for (auto k : {DeviceKind::gpu, DeviceKind::nvswitch, DeviceKind::pcie_switch, DeviceKind::nic,
                 DeviceKind::network_switch})
    if (s == device_kind_name(k)) return k;
  return std::nullopt;
}

// Link overrides shared by intra_node, inter_node and topology links.
void apply_link_overrides(LinkSpec& spec, const nlohmann::json& j, const std::string& path) {
  if (j.contains("bandwidth_GBps"))
    spec.bandwidth_Bps = get_nonnegative(j, path, "bandwidth_GBps", true) * 1e9;
  if (j.contains("efficiency")) {
    spec.efficiency = get_nonnegative(j, path, "efficiency", true);
    if (spec.efficiency > 1) throw InputError(join_path(path, "efficiency"), "must be in (0, 1]");
  }
  if (j.contains("latency_us")) spec.latency = Time::from_us(get_latency_us(j, path, "latency_us"));
}

// "nvlink4" or {"link": "nvlink4", "bandwidth_GBps": ..., ...}; `extra` lists further allowed keys.
LinkSpec parse_link_ref(const nlohmann::json& j, const std::string& path,
                        const std::vector<std::string_view>& keys) {
  if (j.is_string()) return load_link(j.get<std::string>(), path);
  check_keys(j, path, keys);
  LinkSpec spec = load_link(get_string(j, path, "link"), join_path(path, "link"));
  apply_link_overrides(spec, j, path);
  return spec;
}

IntraNodeConfig parse_intra(const nlohmann::json& j, const std::string& path) {
  IntraNodeConfig c;
  c.link = parse_link_ref(j, path, {"fabric", "link", "nvls", "bandwidth_GBps", "efficiency", "latency_us"});
  c.fabric = c.link.link_class == LinkClass::pcie ? IntraFabric::pcie : IntraFabric::nvswitch;
  if (j.is_object() && j.contains("fabric")) {
    const std::string f = get_string(j, path, "fabric");
    if (f == "nvswitch")
      c.fabric = IntraFabric::nvswitch;
    else if (f == "pcie")
      c.fabric = IntraFabric::pcie;
    else
      throw InputError(join_path(path, "fabric"),
                       "unknown fabric '" + f + "'; valid choices: nvswitch, pcie");
  }
  if (j.is_object() && j.contains("nvls")) c.nvls = get_bool(j, path, "nvls");
  if (c.nvls && c.fabric != IntraFabric::nvswitch)
    throw InputError(join_path(path, "nvls"), "in-switch reduction (NVLS) needs fabric 'nvswitch'");
  return c;
}

// {"kind": "single_switch" | "fat_tree" | "rail_optimized", "nodes_per_leaf": N, "oversubscription": R,
//  "sharp": B, "pxn": B}
FabricConfig parse_fabric(const nlohmann::json& j, const std::string& path) {
  check_keys(j, path, {"kind", "nodes_per_leaf", "oversubscription", "sharp", "pxn"});
  FabricConfig f;
  constexpr const char* kKinds = "single_switch, fat_tree, rail_optimized";
  if (j.is_object() && !j.contains("kind"))
    throw InputError(join_path(path, "kind"), std::string("missing required key; valid choices: ") + kKinds);
  const std::string kind = get_string(j, path, "kind");
  bool known = false;
  for (auto k : {FabricKind::single_switch, FabricKind::fat_tree, FabricKind::rail_optimized})
    if (kind == fabric_kind_name(k)) f.kind = k, known = true;
  if (!known)
    throw InputError(join_path(path, "kind"), "unknown fabric '" + kind + "'; valid choices: " + kKinds);
  auto flag = [&](const char* key, const char* meaning) {
    if (!j.at(key).is_boolean())
      throw InputError(join_path(path, key), std::string("expected true or false (") + meaning + "), got " +
                                                 j.at(key).dump());
    return j.at(key).get<bool>();
  };
  if (j.contains("sharp")) {
    f.sharp = flag("sharp", "the switch reduces in the network: InfiniBand SHARP");
    if (f.sharp && f.kind != FabricKind::single_switch)
      throw InputError(join_path(path, "sharp"),
                       "in-network reduction is modelled on one switch (kind 'single_switch'), not '" + kind +
                           "': SHARP's aggregation over leaves and a spine is not");
  }
  if (j.contains("pxn")) {
    f.pxn = flag("pxn", "cross-rail messages go through the peer GPU on the destination's rail: NCCL's PXN");
    if (f.kind != FabricKind::rail_optimized)
      throw InputError(join_path(path, "pxn"),
                       "applies to kind 'rail_optimized' only (a leaf per NIC rail), not '" + kind + "'");
  }
  if (f.kind == FabricKind::single_switch) {
    for (const char* key : {"nodes_per_leaf", "oversubscription"})
      if (j.contains(key))
        throw InputError(join_path(path, key),
                         "does not apply to kind 'single_switch' (one non-blocking switch); use 'fat_tree' or "
                         "'rail_optimized'");
    return f;
  }
  if (!j.contains("nodes_per_leaf"))
    throw InputError(join_path(path, "nodes_per_leaf"),
                     "missing required key: how many nodes share a leaf group (an integer >= 1)");
  f.nodes_per_leaf = get_positive_int(j, path, "nodes_per_leaf", kMaxNodes);
  if (j.contains("oversubscription")) {
    f.oversubscription = get_nonnegative(j, path, "oversubscription", true);
    if (!(f.oversubscription >= 1) || f.oversubscription > 1e6)
      throw InputError(
          join_path(path, "oversubscription"),
          "a leaf's downlink / uplink bandwidth ratio in [1, 1e6] (1 = full bisection, 2 = 2:1), got " +
              j.at("oversubscription").dump());
  }
  return f;
}

InterNodeConfig parse_inter(const nlohmann::json& j, const std::string& path) {
  InterNodeConfig c;
  c.link =
      parse_link_ref(j, path, {"link", "nic_attach", "fabric", "bandwidth_GBps", "efficiency", "latency_us"});
  const bool has_attach = j.is_object() && j.contains("nic_attach");
  c.nic_attach = has_attach ? parse_link_ref(j.at("nic_attach"), join_path(path, "nic_attach"),
                                             {"link", "bandwidth_GBps", "efficiency", "latency_us"})
                            : load_link("pcie-gen5", join_path(path, "nic_attach"));
  if (j.is_object() && j.contains("fabric"))
    c.fabric = parse_fabric(j.at("fabric"), join_path(path, "fabric"));
  return c;
}

LinkClass default_link_class(DeviceKind a, DeviceKind b) {
  auto either = [&](DeviceKind k) { return a == k || b == k; };
  if (either(DeviceKind::nvswitch)) return LinkClass::nvlink;
  if (either(DeviceKind::pcie_switch)) return LinkClass::pcie;
  if (either(DeviceKind::nic) && either(DeviceKind::gpu)) return LinkClass::pcie;
  if (a == DeviceKind::gpu && b == DeviceKind::gpu) return LinkClass::nvlink;
  return LinkClass::network;
}

// Every GPU must reach every other GPU without passing through a third GPU (GPUs do not forward).
void check_connected(const ExplicitTopology& t, const std::string& path) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < t.devices.size(); ++i) index[t.devices[i].id] = i;
  std::vector<std::vector<std::size_t>> out(t.devices.size());
  for (const auto& l : t.links) {
    out[index[l.from]].push_back(index[l.to]);
    if (l.duplex) out[index[l.to]].push_back(index[l.from]);
  }
  for (std::size_t s = 0; s < t.devices.size(); ++s) {
    if (t.devices[s].kind != DeviceKind::gpu) continue;
    std::vector<char> seen(t.devices.size(), 0);
    std::vector<std::size_t> stack{s};
    seen[s] = 1;
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      if (u != s && t.devices[u].kind == DeviceKind::gpu) continue;
      for (std::size_t v : out[u])
        if (!seen[v]) seen[v] = 1, stack.push_back(v);
    }
    for (std::size_t d = 0; d < t.devices.size(); ++d)
      if (t.devices[d].kind == DeviceKind::gpu && !seen[d])
        throw InputError(path, "disconnected topology: GPU '" + t.devices[s].id + "' cannot reach GPU '" +
                                   t.devices[d].id + "' (GPUs do not forward traffic)");
  }
}

ExplicitTopology parse_topology(const nlohmann::json& j, const std::string& path) {
  check_keys(j, path, {"devices", "links"});
  ExplicitTopology t;
  const std::string dpath = join_path(path, "devices");
  if (!j.contains("devices") || !j.at("devices").is_array())
    throw InputError(dpath, "expected an array of devices");
  std::map<std::string, DeviceKind> kinds;
  for (std::size_t i = 0; i < j.at("devices").size(); ++i) {
    const auto& d = j.at("devices")[i];
    const std::string p = dpath + "[" + std::to_string(i) + "]";
    check_keys(d, p, {"id", "kind", "node", "nvls"});
    TopologyDevice dev;
    dev.id = get_string(d, p, "id");
    const std::string kind = get_string(d, p, "kind");
    const auto k = parse_device_kind(kind);
    if (!k)
      throw InputError(join_path(p, "kind"), "unknown device kind '" + kind +
                                                 "'; valid choices: gpu, nvswitch, pcie_switch, nic, switch");
    dev.kind = *k;
    if (d.contains("node")) dev.node = static_cast<int>(get_nonnegative(d, p, "node"));
    if (d.contains("nvls")) dev.nvls = get_bool(d, p, "nvls");
    if (!kinds.emplace(dev.id, dev.kind).second)
      throw InputError(join_path(p, "id"), "duplicate id '" + dev.id + "'");
    t.devices.push_back(dev);
  }
  if (std::none_of(t.devices.begin(), t.devices.end(), [](auto& d) { return d.kind == DeviceKind::gpu; }))
    throw InputError(dpath, "the topology has no device of kind 'gpu'");
  const std::string lpath = join_path(path, "links");
  if (!j.contains("links") || !j.at("links").is_array())
    throw InputError(lpath, "expected an array of links");
  for (std::size_t i = 0; i < j.at("links").size(); ++i) {
    const auto& l = j.at("links")[i];
    const std::string p = lpath + "[" + std::to_string(i) + "]";
    check_keys(l, p, {"from", "to", "bandwidth_GBps", "efficiency", "latency_us", "duplex", "class"});
    TopologyLink link;
    for (auto* end : {&link.from, &link.to}) {
      const char* key = end == &link.from ? "from" : "to";
      *end = get_string(l, p, key);
      if (!kinds.count(*end)) throw InputError(join_path(p, key), "unknown device id '" + *end + "'");
    }
    link.spec.name = "explicit";
    link.spec.bandwidth_Bps = get_nonnegative(l, p, "bandwidth_GBps", true) * 1e9;
    link.spec.latency = Time::from_us(l.contains("latency_us") ? get_latency_us(l, p, "latency_us") : 0.0);
    apply_link_overrides(link.spec, l, p);
    link.spec.link_class = default_link_class(kinds[link.from], kinds[link.to]);
    if (l.contains("class")) {
      const std::string c = get_string(l, p, "class");
      if (c == "nvlink")
        link.spec.link_class = LinkClass::nvlink;
      else if (c == "pcie")
        link.spec.link_class = LinkClass::pcie;
      else if (c == "network")
        link.spec.link_class = LinkClass::network;
      else
        throw InputError(join_path(p, "class"),
                         "unknown link class '" + c + "'; valid choices: nvlink, pcie, network");
    }
    if (l.contains("duplex")) link.duplex = get_bool(l, p, "duplex");
    t.links.push_back(link);
  }
  check_connected(t, path);
  return t;
}

ClusterConfig parse_merged(const nlohmann::json& j, const std::string& path, const std::string& name) {
  check_keys(j, path, kClusterKeys);
  ClusterConfig c;
  c.name = name;
  if (j.contains("description")) c.description = get_string(j, path, "description");
  if (!j.contains("gpu")) throw InputError(join_path(path, "gpu"), "missing required key");
  c.gpu = j.at("gpu").is_object() ? parse_gpu(j.at("gpu"), join_path(path, "gpu"), "custom")
                                  : load_gpu(get_string(j, path, "gpu"), join_path(path, "gpu"));
  if (j.contains("collective_fits"))
    c.collective_fits = parse_collective_fits(j.at("collective_fits"), join_path(path, "collective_fits"));
  if (j.contains("tuning")) apply_tuning(c.tuning, j.at("tuning"), join_path(path, "tuning"));
  if (j.contains("nodes")) c.nodes = get_positive_int(j, path, "nodes");
  if (c.nodes > kMaxNodes)
    throw InputError(join_path(path, "nodes"),
                     "at most " + std::to_string(kMaxNodes) + " nodes, got " + std::to_string(c.nodes));
  if (j.contains("topology")) {
    if (j.contains("gpus_per_node"))
      throw InputError(
          join_path(path, "gpus_per_node"),
          "does not apply to a cluster with an explicit \"topology\" (its GPUs are listed there)");
    c.topology = parse_topology(j.at("topology"), join_path(path, "topology"));
    const auto* fabric = j.contains("inter_node") && j.at("inter_node").is_object() &&
                                 j.at("inter_node").contains("fabric") && j.at("inter_node").at("fabric").is_object()
                             ? &j.at("inter_node").at("fabric")
                             : nullptr;
    if (fabric != nullptr && fabric->contains("sharp") && fabric->at("sharp") == true)
      throw InputError(join_path(path, "inter_node.fabric.sharp"),
                       "in-network reduction is modelled on a preset's fabric switch, not on an explicit "
                       "\"topology\"");
    return c;
  }
  c.gpus_per_node = get_positive_int(j, path, "gpus_per_node");
  if (c.gpus_per_node > kMaxGpusPerNode)
    throw InputError(join_path(path, "gpus_per_node"), "at most " + std::to_string(kMaxGpusPerNode) +
                                                           " GPUs per node, got " +
                                                           std::to_string(c.gpus_per_node));
  if (!j.contains("intra_node")) throw InputError(join_path(path, "intra_node"), "missing required key");
  c.intra_node = parse_intra(j.at("intra_node"), join_path(path, "intra_node"));
  if (j.contains("inter_node"))
    c.inter_node = parse_inter(j.at("inter_node"), join_path(path, "inter_node"));
  else if (c.nodes > 1)
    throw InputError(join_path(path, "inter_node"), "required when nodes > 1");
  return c;
}

}  // namespace

std::vector<std::string> cluster_presets() {
  return list_configs("clusters");
}

ClusterConfig parse_cluster(const nlohmann::json& section, const std::string& path_prefix) {
  check_keys(section, path_prefix, kClusterKeys);
  if (!section.contains("preset")) return parse_merged(section, path_prefix, "custom");
  const std::string preset = get_string(section, path_prefix, "preset");
  nlohmann::json merged = read_config_json("clusters", preset, join_path(path_prefix, "preset"));
  nlohmann::json overrides = section;
  overrides.erase("preset");
  // A partial node (nccl-tests' -g 4 on an 8-GPU server) uses fewer GPUs than the preset's node has;
  // more would be hardware the preset does not describe.
  if (overrides.contains("gpus_per_node") && merged.contains("gpus_per_node") &&
      merged.at("gpus_per_node").is_number_integer() && overrides.at("gpus_per_node").is_number_integer() &&
      overrides.at("gpus_per_node").get<long long>() > merged.at("gpus_per_node").get<long long>())
    throw InputError(join_path(path_prefix, "gpus_per_node"),
                     std::to_string(overrides.at("gpus_per_node").get<long long>()) +
                         " GPUs per node, but a " + preset + " node has " +
                         std::to_string(merged.at("gpus_per_node").get<long long>()) +
                         "; use at most that many (a partial node), or describe a larger node as a custom "
                         "cluster without \"preset\"");
  merged.merge_patch(overrides);
  return parse_merged(merged, path_prefix, preset);
}

FabricConfig fabric_from_options(const std::string& kind, std::optional<int> nodes_per_leaf,
                                 std::optional<double> oversubscription, bool sharp, bool no_pxn) {
  nlohmann::json j = {{"kind", kind}};
  if (sharp) j["sharp"] = true;
  if (no_pxn) j["pxn"] = false;
  if (nodes_per_leaf) j["nodes_per_leaf"] = *nodes_per_leaf;
  if (oversubscription) j["oversubscription"] = *oversubscription;
  try {
    return parse_fabric(j, "");
  } catch (const InputError& e) {
    throw e.at(e.where() == "nodes_per_leaf"     ? "--nodes-per-leaf"
               : e.where() == "oversubscription" ? "--oversubscription"
               : e.where() == "sharp"            ? "--sharp"
               : e.where() == "pxn"              ? "--no-pxn"
                                                 : "--fabric");
  }
}

ClusterConfig preset_cluster(const std::string& preset, int nodes) {
  return parse_cluster(nlohmann::json{{"preset", preset}, {"nodes", nodes}}, "cluster");
}

ClusterConfig preset_cluster(const std::string& preset, std::optional<int> nodes,
                             const std::string& path_prefix, std::optional<int> gpus_per_node) {
  nlohmann::json section{{"preset", preset}};
  if (nodes) section["nodes"] = *nodes;
  if (gpus_per_node) section["gpus_per_node"] = *gpus_per_node;
  return parse_cluster(section, path_prefix);
}

ClusterConfig parse_cluster_text(const std::string& json_text, const std::string& where) {
  return parse_cluster(nlohmann::json(parse_json_text(json_text, where)), where);
}

}  // namespace spsim::analysis
