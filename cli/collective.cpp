// `spsim collective`: nccl-tests-style table of one collective's simulated time and bandwidth.
#include "analysis/simulate/collective.hpp"

#include <iostream>

#include "analysis/config/cluster.hpp"
#include "analysis/config/schema.hpp"
#include "analysis/report/json.hpp"
#include "cli/commands.hpp"
#include "runtime/core/error.hpp"

namespace spsim::cli {

namespace {
struct Args {
  analysis::CollectiveArgs sweep;
  int nodes = 1;
  int gpus = 0;
  std::string fabric;
  int nodes_per_leaf = 0;
  double oversubscription = 1;
  bool sharp = false;
  bool no_pxn = false;
  bool json = false;
};
}  // namespace

Action add_collective(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "collective",
      "Simulate one collective over a size sweep and print nccl-tests' columns (size, count, type, redop,\n"
      "algorithm, protocol, time, algbw, busbw with nccl-tests' bus-bandwidth factors), so the table can be\n"
      "held next to a measured one. Exit 0 on success, 2 on bad input.\n"
      "Example: spsim collective --cluster dgx-h100 --nodes 2 --op all_reduce --min-bytes 1M --max-bytes 1G\n"
      "         spsim collective --cluster dgx-h100 --gpus 4 --op all_gather --min-bytes 1M --max-bytes 1G\n"
      "         spsim collective --cluster dgx-h100 --nodes 16 --fabric fat_tree --nodes-per-leaf 4 \\\n"
      "               --oversubscription 2 --op all_to_all --min-bytes 1M --max-bytes 1G");
  auto a = std::make_shared<Args>();
  sub->add_option("--cluster", a->sweep.cluster,
                  "cluster preset: " + join_names(analysis::cluster_presets()) + " (configs/clusters/)")
      ->required();
  auto* nodes = sub->add_option("--nodes", a->nodes,
                                "number of nodes (default: the preset's, or as few as hold --gpus)");
  auto* gpus = sub->add_option(
      "--gpus", a->gpus,
      "total ranks, as nccl-tests' processes x -t x -g: GPUS / nodes on each node, at most the "
      "preset's node\n(a partial node: --gpus 4 on one 8-GPU node); default every GPU");
  sub->add_option("--op", a->sweep.op, "collective: " + rt::collective_op_choices())->required();
  sub->add_option("--min-bytes", a->sweep.min_bytes, "smallest size, bytes (K/M/G suffixes)")->required();
  sub->add_option("--max-bytes", a->sweep.max_bytes, "largest size, bytes (K/M/G suffixes)")->required();
  sub->add_option("--step-factor", a->sweep.step_factor, "multiply the size by this each row (default 2)");
  std::string algos;
  for (auto kind : rt::collective_ops())
    algos += "\n  " + std::string(rt::comm_kind_name(kind)) + ": " +
             join_names(analysis::schema::algorithm_choices(kind));
  sub->add_option("--algo", a->sweep.algo,
                  "algorithm (default auto: the simulator's tuner); by --op:" + algos);
  sub->add_option("--protocol", a->sweep.protocol, "protocol: " + sim::protocol_choices());
  sub->add_option("--network", a->sweep.network,
                  "network model: " + join_names(analysis::schema::networks()) + " (default flow)");
  auto* fabric = sub->add_option(
      "--fabric", a->fabric,
      "how the nodes' NICs are switched (default: the preset's, one non-blocking switch):\n"
      "  single_switch   every NIC on one switch\n"
      "  fat_tree        a leaf switch per --nodes-per-leaf nodes, leaves joined at a spine by uplinks\n"
      "                  of (NICs on a leaf) x NIC bandwidth / --oversubscription\n"
      "  rail_optimized  a leaf switch per rail (NIC index) of each group of --nodes-per-leaf nodes, each\n"
      "                  with uplinks of (its NICs) x NIC bandwidth / --oversubscription to a spine;\n"
      "                  cross-rail messages go over NVLink to the peer GPU on the right rail (PXN)");
  auto* per_leaf = sub->add_option("--nodes-per-leaf", a->nodes_per_leaf,
                                   "with --fabric fat_tree or rail_optimized: nodes on one leaf (group)");
  auto* over = sub->add_option(
      "--oversubscription", a->oversubscription,
      "with --fabric fat_tree or rail_optimized: a leaf's downlink / uplink bandwidth (default 1; 2 = 2:1)");
  sub->add_flag("--no-pxn", a->no_pxn,
                "with --fabric rail_optimized: cross-rail messages leave through their own NIC and cross the\n"
                "spine (NCCL_PXN_DISABLE=1) instead of going through the peer GPU on the destination's rail");
  sub->add_flag("--sharp", a->sharp,
                "the fabric's switch reduces in the network (InfiniBand SHARP, single_switch fabrics): adds\n"
                "CollNet (collnet_direct) to the all-reduce algorithms");
  sub->add_flag("--json", a->json, "machine-readable output (schema_version 1)");
  return [a, nodes, gpus, fabric, per_leaf, over]() -> int {
    if (nodes->count() > 0) a->sweep.nodes = a->nodes;
    if (gpus->count() > 0) a->sweep.gpus = a->gpus;
    if (fabric->count() > 0) a->sweep.fabric = a->fabric;
    if (per_leaf->count() > 0) a->sweep.nodes_per_leaf = a->nodes_per_leaf;
    if (over->count() > 0) a->sweep.oversubscription = a->oversubscription;
    a->sweep.sharp = a->sharp;
    a->sweep.no_pxn = a->no_pxn;
    const auto sweep = analysis::run_collective_sweep(a->sweep);
    std::cout << (a->json ? analysis::collective_json(sweep) : analysis::render_collective(sweep));
    return 0;
  };
}

}  // namespace spsim::cli
