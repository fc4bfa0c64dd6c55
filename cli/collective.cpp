// `spsim collective`: nccl-tests-style table of one collective's simulated time and bandwidth.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "runtime/core/error.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/collectives.hpp"

namespace spsim::cli {

namespace {

struct CollectiveArgs {
  std::string cluster;
  int nodes = 1;
  bool nodes_given = false;  // else the preset's
  std::string op;
  std::string min_bytes, max_bytes;
  double step_factor = 2;
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string network = "flow";
  bool json = false;
};

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

sim::ClusterConfig load_cluster(const CollectiveArgs& a) {
  nlohmann::json section{{"preset", a.cluster}};
  if (a.nodes_given) {
    if (a.nodes < 1) throw InputError("--nodes", "must be >= 1, got " + std::to_string(a.nodes));
    section["nodes"] = a.nodes;
  }
  try {
    return sim::parse_cluster(section, "");
  } catch (const InputError& e) {
    throw e.at(e.where() == "preset" ? "--cluster" : e.where() == "nodes" ? "--nodes" : e.where());
  }
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

int run_collective(const CollectiveArgs& a) {
  const auto kind = rt::parse_collective_op(a.op);
  if (!kind)
    throw InputError("--op",
                     "unknown collective '" + a.op + "'; valid choices: " + rt::collective_op_choices());
  const auto mode = sim::parse_network_mode(a.network);
  if (!mode)
    throw InputError("--network",
                     "unknown network model '" + a.network + "'; valid choices: flow, analytical");
  const sim::Cluster cluster(load_cluster(a));
  const auto sizes = sizes_of(a);
  const int p = static_cast<int>(cluster.gpus().size());
  sim::CollectiveCall call{*kind, cluster.gpus(), 0, a.algo, a.protocol, 1};
  const bool reduces =
      *kind == rt::CommKind::all_reduce || *kind == rt::CommKind::reduce_scatter;

  nlohmann::ordered_json doc;
  doc["schema_version"] = 1;
  doc["command"] = "collective";
  doc["cluster"] = cluster.config().name;
  doc["nodes"] = cluster.num_nodes();
  doc["ranks"] = p;
  doc["op"] = a.op;
  doc["network"] = a.network;
  doc["rows"] = nlohmann::ordered_json::array();
  if (!a.json) {
    std::printf("# spsim collective: %s on %s, %d node(s), %d ranks, %s network model\n", a.op.c_str(),
                cluster.config().name.c_str(), cluster.num_nodes(), p, a.network.c_str());
    std::printf("%14s %13s %6s %5s %16s %6s %12s %9s %9s\n", "size(B)", "count", "type", "redop", "algo",
                "proto", "time(us)", "algbw", "busbw");
    std::printf("%14s %13s %6s %5s %16s %6s %12s %9s %9s\n", "", "(elements)", "", "", "", "", "", "(GB/s)",
                "(GB/s)");
  }
  for (double size : sizes) {
    call.bytes = size;
    const auto r = sim::simulate_collective(cluster, *mode, call);
    const double t = r.duration().seconds();
    const double algbw = t > 0 ? size / t / 1e9 : 0.0;
    const double busbw = algbw * rt::bus_bandwidth_factor(*kind, p);
    const auto count = static_cast<long long>(size / 4);
    if (a.json) {
      doc["rows"].push_back({{"size_bytes", static_cast<long long>(size)},
                             {"count", count},
                             {"type", "float"},
                             {"redop", reduces ? "sum" : "none"},
                             {"algorithm", r.algorithm},
                             {"protocol", sim::protocol_name(r.protocol)},
                             {"time_us", r.duration().us()},
                             {"algbw_GBps", algbw},
                             {"busbw_GBps", busbw}});
    } else {
      std::printf("%14lld %13lld %6s %5s %16s %6s %12.2f %9.2f %9.2f\n", static_cast<long long>(size), count,
                  "float", reduces ? "sum" : "none", r.algorithm.c_str(), sim::protocol_name(r.protocol),
                  r.duration().us(), algbw, busbw);
    }
  }
  if (a.json) std::cout << doc.dump(2) << "\n";
  return 0;
}

}  // namespace

Action add_collective(CLI::App& app) {
  auto* sub =
      app.add_subcommand("collective", "Simulate one collective over a size sweep (nccl-tests columns)");
  auto a = std::make_shared<CollectiveArgs>();
  sub->add_option("--cluster", a->cluster, "cluster preset (configs/clusters/)")->required();
  auto* nodes = sub->add_option("--nodes", a->nodes, "number of nodes (default: the preset's)");
  sub->add_option("--op", a->op, std::string("collective: ") + rt::collective_op_choices())->required();
  sub->add_option("--min-bytes", a->min_bytes, "smallest size, bytes (K/M/G suffixes)")->required();
  sub->add_option("--max-bytes", a->max_bytes, "largest size, bytes (K/M/G suffixes)")->required();
  sub->add_option("--step-factor", a->step_factor, "multiply the size by this each row (default 2)");
  sub->add_option("--algo", a->algo, "algorithm name or auto (default auto)");
  sub->add_option("--protocol", a->protocol, std::string("protocol: ") + sim::protocol_choices());
  sub->add_option("--network", a->network, "network model: flow (default) or analytical");
  sub->add_flag("--json", a->json, "JSON output");
  return [a, nodes]() -> int {
    a->nodes_given = nodes->count() > 0;
    return run_collective(*a);
  };
}

}  // namespace spsim::cli
