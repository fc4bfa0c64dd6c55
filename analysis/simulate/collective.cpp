// `spsim collective`: a size sweep of one simulated collective.
#include "analysis/simulate/collective.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "analysis/config/cluster.hpp"
#include "analysis/config/schema.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis {

namespace {

// "8", "64K", "128M", "1G" (binary multiples, as nccl-tests reads -b/-e).
double parse_size(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError(where, "'" + text + "' is not a size; use bytes with an optional K, M or G suffix");
  }
  const std::string suffix = text.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "m")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty())
    throw InputError(where, "unknown size suffix '" + suffix + "'; valid: K, M, G");
  v = std::floor(v * mult);
  if (!(v >= 0) || v > 1e15) throw InputError(where, "size must be in [0, 1e15] bytes, got '" + text + "'");
  return v;
}

sim::ClusterConfig load_preset(const CollectiveArgs& a, std::optional<int> nodes,
                               std::optional<int> gpus_per_node) {
  try {
    return preset_cluster(a.cluster, nodes, "", gpus_per_node);
  } catch (const InputError& e) {
    throw e.at(e.where() == "preset"          ? "--cluster"
               : e.where() == "nodes"         ? "--nodes"
               : e.where() == "gpus_per_node" ? "--gpus"
                                              : e.where());
  }
}

// --gpus G over N nodes runs G / N GPUs of each node (N defaults to as few nodes as hold G).
sim::ClusterConfig load_cluster(const CollectiveArgs& a) {
  if (a.nodes && *a.nodes < 1) throw InputError("--nodes", "must be >= 1, got " + std::to_string(*a.nodes));
  if (!a.gpus) return load_preset(a, a.nodes, std::nullopt);
  const long long gpus = *a.gpus;
  if (gpus < 1) throw InputError("--gpus", "must be >= 1, got " + std::to_string(gpus));
  const sim::ClusterConfig preset = load_preset(a, std::nullopt, std::nullopt);
  if (preset.topology)
    throw InputError("--gpus", "cluster " + a.cluster +
                                   " lists its devices explicitly; --gpus needs a preset "
                                   "of identical nodes");
  const long long per_preset = preset.gpus_per_node;
  const std::string per_text = std::to_string(per_preset);
  if (!a.nodes) {
    const long long nodes = (gpus + per_preset - 1) / per_preset;
    if (gpus % nodes != 0)
      throw InputError("--gpus", std::to_string(gpus) + " GPUs do not fill " + std::to_string(nodes) +
                                     " nodes of " + per_text + " evenly; pass --nodes N with N dividing " +
                                     std::to_string(gpus) + " and " + std::to_string(gpus) +
                                     "/N <= " + per_text);
    try {  // the node count is derived from --gpus: a bound on it is a bound on --gpus
      return load_preset(a, static_cast<int>(std::min<long long>(nodes, INT32_MAX)),
                         static_cast<int>(gpus / nodes));
    } catch (const InputError& e) {
      if (e.where() != "--nodes") throw;
      throw InputError("--gpus", std::to_string(gpus) + " GPUs need " + std::to_string(nodes) + " nodes of " +
                                     per_text + ": " + e.message());
    }
  }
  const long long nodes = *a.nodes;
  if (gpus % nodes != 0)
    throw InputError("--gpus", std::to_string(gpus) + " GPUs do not split evenly over --nodes " +
                                   std::to_string(nodes) + "; give a multiple of it");
  if (gpus / nodes > per_preset)
    throw InputError("--gpus", std::to_string(gpus) + " GPUs over " + std::to_string(nodes) + " nodes is " +
                                   std::to_string(gpus / nodes) + " per node, but a " + a.cluster +
                                   " node has " + per_text + "; raise --nodes");
  return load_preset(a, static_cast<int>(nodes), static_cast<int>(gpus / nodes));
}

std::vector<double> sizes_of(const CollectiveArgs& a) {
  const double lo = parse_size(a.min_bytes, "--min-bytes"), hi = parse_size(a.max_bytes, "--max-bytes");
  if (lo > hi) throw InputError("--max-bytes", "must be >= --min-bytes");
  if (lo < hi && !(a.step_factor > 1))
    throw InputError("--step-factor", "must be > 1, got " + std::to_string(a.step_factor));
  std::vector<double> sizes;
  for (double s = lo; s <= hi; s = std::max(s + 1, std::floor(s * a.step_factor))) {
    sizes.push_back(s);
    if (sizes.size() > 1000) throw InputError("--step-factor", "more than 1000 sizes; raise the factor");
    if (lo == hi) break;
  }
  return sizes;
}

std::optional<sim::Protocol> protocol_of(const std::string& name) {
  if (name == "auto") return std::nullopt;
  if (auto p = sim::parse_protocol(name)) return p;
  throw InputError("--protocol",
                   "unknown protocol '" + name + "'; valid choices: " + sim::protocol_choices());
}

}  // namespace

CollectiveSweep run_collective_sweep(const CollectiveArgs& a) {
  const auto kind = rt::parse_collective_op(a.op);
  if (!kind)
    throw InputError("--op",
                     "unknown collective '" + a.op + "'; valid choices: " + rt::collective_op_choices());
  const auto mode = sim::parse_network_mode(a.network);
  if (!mode)
    throw InputError("--network", "unknown network model '" + a.network +
                                      "'; valid choices: " + join_names(schema::networks()));
  sim::ClusterConfig config = load_cluster(a);
  if (a.fabric)
    config.inter_node.fabric =
        fabric_from_options(*a.fabric, a.nodes_per_leaf, a.oversubscription, a.sharp, a.no_pxn);
  else if (a.nodes_per_leaf || a.oversubscription)
    throw InputError(a.nodes_per_leaf ? "--nodes-per-leaf" : "--oversubscription",
                     "needs --fabric fat_tree or rail_optimized");
  else if (a.no_pxn)
    throw InputError("--no-pxn", "needs --fabric rail_optimized");
  else if (a.sharp)
    config.inter_node.fabric = fabric_from_options(std::string(sim::fabric_kind_name(config.inter_node.fabric.kind)),
                                                   std::nullopt, std::nullopt, true);
  if (a.sharp && config.nodes < 2)
    throw InputError("--sharp", "the in-network reduction joins nodes; the cluster has one (give --nodes 2 or more)");
  const sim::Cluster cluster(std::move(config));
  const auto sizes = sizes_of(a);
  CollectiveSweep out;
  out.op = a.op;
  out.kind = *kind;
  out.reduces = *kind == rt::CommKind::all_reduce || *kind == rt::CommKind::reduce_scatter;
  out.cluster = cluster.config().name;
  out.nodes = cluster.num_nodes();
  out.ranks = static_cast<int>(cluster.gpus().size());
  out.network = a.network;
  if (out.nodes > 1) out.fabric = sim::describe_fabric(cluster.config().inter_node.fabric);
  const auto protocol = protocol_of(a.protocol);
  for (double size : sizes) {
    try {
      out.rows.push_back(simulate_collective_row(cluster, *mode, *kind, size, a.algo, protocol));
    } catch (const InputError& e) {
      throw e.at(e.where() == "algorithm" ? "--algo" : e.where() == "protocol" ? "--protocol" : e.where());
    }
  }
  return out;
}

CollectiveRow simulate_collective_row(const sim::Cluster& cluster, sim::NetworkMode mode, rt::CommKind kind,
                                      double bytes, const std::string& algo,
                                      std::optional<sim::Protocol> protocol) {
  const sim::CollectiveCall call{kind, cluster.gpus(), bytes, algo, protocol, 1};
  const sim::CollectiveResult r = sim::simulate_collective(cluster, mode, call);
  const double t = r.duration().seconds();
  CollectiveRow row;
  row.size_bytes = bytes;
  row.count = static_cast<long long>(bytes / 4);
  row.algorithm = r.algorithm;
  row.protocol = r.protocol;
  row.time_us = r.duration().us();
  row.algbw_GBps = t > 0 ? bytes / t / 1e9 : 0.0;
  row.busbw_GBps = row.algbw_GBps * rt::bus_bandwidth_factor(kind, static_cast<int>(cluster.gpus().size()));
  return row;
}

std::string render_collective(const CollectiveSweep& s) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "# spsim collective: %s on %s, %d node(s), %d ranks, %s network model\n",
                s.op.c_str(), s.cluster.c_str(), s.nodes, s.ranks, s.network.c_str());
  out += line;
  if (!s.fabric.empty()) out += "# inter-node fabric: " + s.fabric + "\n";
  std::snprintf(line, sizeof line, "%14s %13s %6s %5s %16s %6s %12s %9s %9s\n", "size(B)", "count", "type",
                "redop", "algo", "proto", "time(us)", "algbw", "busbw");
  out += line;
  std::snprintf(line, sizeof line, "%14s %13s %6s %5s %16s %6s %12s %9s %9s\n", "", "(elements)", "", "", "",
                "", "", "(GB/s)", "(GB/s)");
  out += line;
  for (const auto& r : s.rows) {
    std::snprintf(line, sizeof line, "%14lld %13lld %6s %5s %16s %6s %12.2f %9.2f %9.2f\n",
                  static_cast<long long>(r.size_bytes), r.count, "float", s.reduces ? "sum" : "none",
                  r.algorithm.c_str(), sim::protocol_name(r.protocol), r.time_us, r.algbw_GBps, r.busbw_GBps);
    out += line;
  }
  return out;
}

}  // namespace spsim::analysis
