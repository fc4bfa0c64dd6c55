// `spsim collective`: one collective simulated alone on a cluster over a range of sizes, reported with
// nccl-tests' columns (size, count, type, redop, time, algbw, busbw with its bus-bandwidth factors).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/core/comm_kind.hpp"
#include "sim/cluster/cluster.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis {

// The command line as given; everything is validated by run_collective_sweep (InputError naming the
// option: --cluster, --nodes, --gpus, --op, --min-bytes, --max-bytes, --step-factor, --algo, --protocol,
// --network, --fabric, --nodes-per-leaf, --oversubscription).
struct CollectiveArgs {
  std::string cluster;       // preset name (configs/clusters/)
  std::optional<int> nodes;  // default: the preset's, or as many as --gpus needs
  std::optional<int> gpus;  // total ranks (nccl-tests' processes × -t × -g): gpus / nodes per node, at most
                            // the preset's node (a partial node); default: every GPU
  std::string op;           // rt::collective_op_choices()
  std::string min_bytes, max_bytes;  // "8", "64K", "128M", "1G" (binary multiples, as nccl-tests' -b/-e)
  double step_factor = 2;
  std::string algo = "auto";
  std::string protocol = "auto";
  std::string network = "flow";
  // --fabric / --nodes-per-leaf / --oversubscription: the inter-node fabric instead of the preset's
  std::optional<std::string> fabric;
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  bool sharp = false;  // --sharp: the fabric's switch reduces in the network (InfiniBand SHARP)
  bool no_pxn = false;  // --no-pxn: a rail-optimized fabric's cross-rail messages cross the spine
};

struct CollectiveRow {
  double size_bytes = 0;
  long long count = 0;  // float elements, as nccl-tests counts them
  std::string algorithm;
  sim::Protocol protocol = sim::Protocol::simple;
  double time_us = 0;
  double algbw_GBps = 0;  // size / time
  double busbw_GBps = 0;  // algbw × rt::bus_bandwidth_factor(op, ranks)
};

struct CollectiveSweep {
  std::string op;  // as given (e.g. "p2p")
  rt::CommKind kind = rt::CommKind::all_reduce;
  bool reduces = false;  // redop "sum" (all_reduce, reduce_scatter) or "none"
  std::string cluster;
  int nodes = 1;
  int ranks = 0;
  std::string network;
  std::string fabric;  // sim::describe_fabric: "" for one non-blocking switch
  std::vector<CollectiveRow> rows;
};

[[nodiscard]] CollectiveSweep run_collective_sweep(const CollectiveArgs& args);

// One collective of `bytes` run alone on every GPU of `cluster` (what one row of the sweep holds); the
// validation rows of kind "collective" come through here. InputError at "algorithm" / "protocol".
[[nodiscard]] CollectiveRow simulate_collective_row(const sim::Cluster& cluster, sim::NetworkMode mode,
                                                    rt::CommKind kind, double bytes, const std::string& algo,
                                                    std::optional<sim::Protocol> protocol);
// The nccl-tests-style text table.
[[nodiscard]] std::string render_collective(const CollectiveSweep& sweep);

}  // namespace spsim::analysis
