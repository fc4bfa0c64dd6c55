// Collectives: validation and tuning of calls, CollectiveRun bookkeeping, and the registry.
#include "sim/collectives/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "runtime/core/error.hpp"

namespace spsim::sim {

// ---- group shape ---------------------------------------------------------------------------------

GroupShape make_group_shape(const Cluster& cluster, const std::vector<DeviceId>& ranks) {
  if (ranks.empty()) throw InputError("ranks", "a collective needs at least one rank");
  GroupShape s;
  s.size = static_cast<int>(ranks.size());
  std::map<int, int> node_index;
  std::vector<char> seen(cluster.num_devices(), 0);
  for (int r = 0; r < s.size; ++r) {
    const DeviceId d = ranks[static_cast<std::size_t>(r)];
    if (d < 0 || static_cast<std::size_t>(d) >= cluster.num_devices() ||
        cluster.device(d).kind != DeviceKind::gpu)
      throw InputError("ranks", "rank " + std::to_string(r) + " is not a GPU of the cluster (device id " +
                                    std::to_string(d) + ")");
    if (seen[static_cast<std::size_t>(d)]++)
      throw InputError("ranks", "GPU " + cluster.device(d).name + " appears twice in the group");
    const auto [it, added] =
        node_index.emplace(cluster.device(d).node, static_cast<int>(s.node_members.size()));
    if (added) s.node_members.emplace_back();
    s.node_members[static_cast<std::size_t>(it->second)].push_back(r);
  }
  s.min_per_node = s.size;
  for (const auto& m : s.node_members) {
    s.min_per_node = std::min(s.min_per_node, static_cast<int>(m.size()));
    s.max_per_node = std::max(s.max_per_node, static_cast<int>(m.size()));
  }
  auto dev = [&](int rank) { return ranks[static_cast<std::size_t>(rank)]; };
  s.uniform_nodes = s.min_per_node == s.max_per_node;
  for (std::size_t n = 1; s.uniform_nodes && n < s.node_members.size(); ++n)
    for (std::size_t i = 0; i < s.node_members[n].size(); ++i)
      if (cluster.device(dev(s.node_members[n][i])).local_index !=
          cluster.device(dev(s.node_members[0][i])).local_index) {
        s.uniform_nodes = false;
        break;
      }
  for (const auto& m : s.node_members)
    if (m.size() >= 2) {
      const Route& r = cluster.route(dev(m[0]), dev(m[1]));
      s.intra_latency = r.latency, s.intra_Bps = r.bottleneck_Bps, s.intra_class = r.link_class;
      s.intra_switch_latency = cluster.link(r.links.front()).latency;
      break;
    }
  if (s.multi_node()) {
    const Route& r = cluster.route(dev(s.node_members[0][0]), dev(s.node_members[1][0]));
    s.inter_latency = r.latency, s.inter_Bps = r.bottleneck_Bps, s.inter_class = r.link_class;
    s.channels = s.max_per_node;
    for (const auto& m : s.node_members) {
      const auto sw = cluster.nvls_switch(cluster.device(dev(m[0])).node);
      if (!sw) {
        s.node_nvls_switches.clear();
        break;
      }
      s.node_nvls_switches.push_back(*sw);
    }
    if (!s.node_nvls_switches.empty())
      s.nvls_hop_latency = cluster.route(dev(0), s.node_nvls_switches.front()).latency;
    const ClusterConfig& config = cluster.config();
    if (!config.topology && config.inter_node.fabric.sharp)
      if (const auto sw = cluster.find_device("fabric")) {
        s.sharp_switch = sw;
        s.sharp_hop_latency = cluster.route(dev(0), *sw).latency;
      }
    if (!config.topology && config.inter_node.fabric.kind != FabricKind::single_switch) {
      std::map<int, int> per_leaf;  // leaf -> ranks of the group under it
      for (const auto& m : s.node_members)
        per_leaf[config.inter_node.fabric.leaf_of(cluster.device(dev(m[0])).node)] +=
            static_cast<int>(m.size());
      if (per_leaf.size() > 1) {
        s.spine_Bps = leaf_uplink_line_Bps(config) * config.inter_node.link.efficiency;
        for (const auto& [leaf, ranks] : per_leaf) s.leaf_ranks = std::max(s.leaf_ranks, ranks);
      }
    }
  } else {
    s.nvls_switch = cluster.nvls_switch(cluster.device(dev(0)).node);
    if (s.nvls_switch) s.nvls_hop_latency = cluster.route(dev(0), *s.nvls_switch).latency;
  }
  return s;
}

// ---- CollectiveRun ---------------------------------------------------------------------------------

CollectiveRun::CollectiveRun(Collectives& owner, CollectiveCall call, GroupShape shape, ProtocolCosts costs,
                             std::string algorithm, Protocol protocol,
                             std::function<void(const CollectiveResult&)> done, bool alone)
    : owner_(owner),
      call_(std::move(call)),
      shape_(std::move(shape)),
      costs_(costs),
      done_(std::move(done)),
      alone_(alone) {
  result_.start = owner_.network_.engine().now();
  result_.algorithm = std::move(algorithm);
  result_.protocol = protocol;
  result_.rank_finish.assign(call_.ranks.size(), result_.start);
  result_.bytes_sent.assign(call_.ranks.size(), 0.0);
}

const Cluster& CollectiveRun::cluster() const {
  return owner_.network_.cluster();
}

void CollectiveRun::record(int rank, double sent) {
  auto& t = result_.rank_finish[static_cast<std::size_t>(rank)];
  t = std::max(t, owner_.network_.engine().now());
  result_.bytes_sent[static_cast<std::size_t>(rank)] += sent;
}

void CollectiveRun::transfer(int from, int to, double bytes, std::function<void()> then) {
  const DeviceId a = device(from), b = device(to);
  const Route& route = cluster().route(a, b);
  result_.bytes_sent[static_cast<std::size_t>(from)] += bytes;
  owner_.network_.transfer(
      a, b, bytes,
      [self = shared_from_this(), from, to, then = std::move(then)] {
        self->record(from, 0);
        self->record(to, 0);
        then();
      },
      TransferOptions{costs_.step(route.link_class), costs_.efficiency_on(route.link_class), &route});
}

void CollectiveRun::transfer_device(int rank, DeviceId other, bool to_device, double bytes,
                                    std::function<void()> then) {
  const DeviceId a = to_device ? device(rank) : other, b = to_device ? other : device(rank);
  const Route& route = cluster().route(a, b);
  if (to_device) result_.bytes_sent[static_cast<std::size_t>(rank)] += bytes;
  owner_.network_.transfer(
      a, b, bytes,
      [self = shared_from_this(), rank, then = std::move(then)] {
        self->record(rank, 0);
        then();
      },
      TransferOptions{costs_.step(route.link_class), costs_.efficiency_on(route.link_class), &route});
}

void CollectiveRun::start_sub(CollectiveCall sub, std::function<void()> then) {
  if (rank_of_device_.empty())
    for (int r = 0; r < size(); ++r) rank_of_device_[device(r)] = r;
  sub.protocol = result_.protocol;
  const std::vector<DeviceId> devices = sub.ranks;
  owner_.start(sub, [self = shared_from_this(), devices, then = std::move(then)](const CollectiveResult& r) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const auto parent = static_cast<std::size_t>(self->rank_of_device_.at(devices[i]));
      self->result_.bytes_sent[parent] += r.bytes_sent[i];
      self->result_.rank_finish[parent] = std::max(self->result_.rank_finish[parent], r.rank_finish[i]);
    }
    then();
  });
}

void CollectiveRun::after(Time delay, std::function<void()> then) {
  owner_.network_.engine().schedule_after(delay, std::move(then));
}

Time CollectiveRun::now() const { return owner_.network_.engine().now(); }

bool CollectiveRun::can_fold_nodes() const {
  // Without contention (analytical) other traffic cannot change this call's times.
  const bool alone = alone_ || owner_.network_.mode() == NetworkMode::analytical;
  // A fat tree of several leaves breaks the symmetry: some hops cross the spine, others do not.
  const auto& config = cluster().config();
  return owner_.may_fold_ && alone && shape_.nodes() >= 3 && shape_.uniform_nodes && !config.topology &&
         config.inter_node.fabric.node_symmetric(cluster().num_nodes());
}

void CollectiveRun::finish() {
  result_.finish = owner_.network_.engine().now();
  result_.folded = folded_;
  if (folded_) {
    // Node 1's ranks only received (standing for node 0's); merge, then copy node 0 to every node.
    const auto& nodes = shape_.node_members;
    for (std::size_t i = 0; i < nodes[0].size(); ++i) {
      const auto a = static_cast<std::size_t>(nodes[0][i]), b = static_cast<std::size_t>(nodes[1][i]);
      const Time t = std::max(result_.rank_finish[a], result_.rank_finish[b]);
      const double sent = result_.bytes_sent[a] + result_.bytes_sent[b];
      for (const auto& members : nodes) {
        result_.rank_finish[static_cast<std::size_t>(members[i])] = t;
        result_.bytes_sent[static_cast<std::size_t>(members[i])] = sent;
      }
    }
  }
  for (auto& t : result_.rank_finish) t = std::min(t, result_.finish);
  auto done = std::move(done_);
  done(result_);
}

// ---- registry ----------------------------------------------------------------------------------------

void AlgorithmRegistry::add(AlgorithmInfo info) {
  if (find(info.name)) throw std::logic_error("AlgorithmRegistry: duplicate algorithm '" + info.name + "'");
  for (const auto& alias : info.aliases)
    if (find(alias)) throw std::logic_error("AlgorithmRegistry: duplicate algorithm name '" + alias + "'");
  algorithms_.push_back(info.make());
  infos_.push_back(std::move(info));
}

const AlgorithmInfo* AlgorithmRegistry::find(std::string_view name) const {
  for (const auto& i : infos_)
    if (i.name == name || std::find(i.aliases.begin(), i.aliases.end(), name) != i.aliases.end()) return &i;
  return nullptr;
}

const Algorithm& AlgorithmRegistry::algorithm(std::string_view name) const {
  for (std::size_t i = 0; i < infos_.size(); ++i)
    if (infos_[i].name == name) return *algorithms_[i];
  throw std::logic_error("AlgorithmRegistry: no algorithm '" + std::string(name) + "'");
}

std::vector<std::string> AlgorithmRegistry::names(std::optional<CommKind> kind) const {
  std::vector<std::string> out;
  for (const auto& i : infos_)
    if (!kind || std::find(i.kinds.begin(), i.kinds.end(), *kind) != i.kinds.end()) out.push_back(i.name);
  return out;
}

// ---- Collectives --------------------------------------------------------------------------------------

Collectives::Collectives(Network& network) : Collectives(network, network.cluster().config().tuning) {}

Collectives::Collectives(Network& network, ProtocolTable protocols)
    : network_(network), protocols_(std::move(protocols)), registry_(default_algorithms()) {}

Collectives::~Collectives() = default;

namespace {

bool implements(const AlgorithmInfo& info, CommKind kind) {
  return std::find(info.kinds.begin(), info.kinds.end(), kind) != info.kinds.end();
}

std::vector<const AlgorithmInfo*> candidate_algorithms(const AlgorithmRegistry& reg,
                                                       const CollectiveCall& call, const GroupShape& shape) {
  const std::string kind = std::string(rt::comm_kind_name(call.kind));
  const std::string choices = join_names(reg.names(call.kind)) + ", auto";
  if (call.algorithm != "auto") {
    const AlgorithmInfo* info = reg.find(call.algorithm);
    if (!info)
      throw InputError("algorithm", "unknown algorithm '" + call.algorithm + "'; valid choices for " + kind +
                                        ": " + choices);
    if (!implements(*info, call.kind))
      throw InputError("algorithm",
                       "'" + call.algorithm + "' does not implement " + kind + "; valid choices: " + choices);
    if (auto why = reg.algorithm(info->name).unsupported(call, shape); !why.empty())
      throw InputError("algorithm", "'" + call.algorithm + "' cannot run this " + kind + ": " + why);
    return {info};
  }
  std::vector<const AlgorithmInfo*> out;
  for (const auto& name : reg.names(call.kind)) {
    const AlgorithmInfo* info = reg.find(name);
    if (info->tuner_candidate && info->tuner_candidate(shape) &&
        reg.algorithm(name).unsupported(call, shape).empty())
      out.push_back(info);
  }
  if (out.empty())
    throw InputError("algorithm", "no algorithm can run this " + kind + "; valid choices: " + choices);
  return out;
}

std::vector<Protocol> candidate_protocols(std::optional<Protocol> asked, AlgorithmFamily family,
                                          const std::string& algo) {
  if (!asked) {
    std::vector<Protocol> out;
    for (auto p : {Protocol::simple, Protocol::ll128, Protocol::ll})
      if (protocol_supported(family, p)) out.push_back(p);
    return out;
  }
  if (!protocol_supported(family, *asked))
    throw InputError("protocol", "'" + std::string(protocol_name(*asked)) + "' is not available with '" +
                                     algo + "' (Simple only); valid: simple, auto");
  return {*asked};
}

}  // namespace

CollectiveChoice Collectives::choose(const CollectiveCall& call) const {
  if (!(call.bytes >= 0) || !std::isfinite(call.bytes))
    throw InputError("bytes", "must be a finite number >= 0, got " + std::to_string(call.bytes));
  const GroupShape shape = make_group_shape(network_.cluster(), call.ranks);
  const auto& fits = network_.cluster().config().collective_fits;
  if (const CollectiveFit* fit = applicable_fit(fits, call.kind, call.algorithm, shape.size)) {
    const Time t = fitted_time(*fit, call.kind, call.bytes);
    return CollectiveChoice{kFittedAlgorithm, Protocol::simple, t.seconds(), t};
  }
  std::optional<CollectiveChoice> best;
  for (const AlgorithmInfo* info : candidate_algorithms(registry_, call, shape)) {
    const Algorithm& alg = registry_.algorithm(info->name);
    for (Protocol p : candidate_protocols(call.protocol, alg.family(), info->name)) {
      const auto costs = resolve_protocol(protocols_, p, alg.family(), call.kind, shape.multi_node(),
                                          shape.min_per_node, shape.nodes(), shape.busbw_bound_Bps());
      const double t = alg.estimate_s(call, shape, costs);
      if (!best || t < best->predicted_s) best = CollectiveChoice{info->name, p, t, Time{}};
    }
  }
  best->predicted = Time::from_seconds(best->predicted_s);  // the winner only: a losing candidate may be slow
  return *best;
}

void Collectives::start(const CollectiveCall& call, Done done) {
  start(call, std::move(done), false);
}

void Collectives::start(const CollectiveCall& call, Done done, bool alone) {
  const CollectiveChoice choice = choose(call);
  if (choice.algorithm == kFittedAlgorithm) {
    auto run =
        std::make_shared<CollectiveRun>(*this, call, make_group_shape(network_.cluster(), call.ranks),
                                        ProtocolCosts{}, choice.algorithm, choice.protocol, std::move(done));
    run->finish_after(choice.predicted, call.bytes * rt::bus_bandwidth_factor(call.kind, run->size()));
    return;
  }
  const Algorithm* alg = &registry_.algorithm(choice.algorithm);
  GroupShape shape = make_group_shape(network_.cluster(), call.ranks);
  const auto costs =
      resolve_protocol(protocols_, choice.protocol, alg->family(), call.kind, shape.multi_node(),
                       shape.min_per_node, shape.nodes(), shape.busbw_bound_Bps());
  auto run = std::make_shared<CollectiveRun>(*this, call, std::move(shape), costs, choice.algorithm,
                                             choice.protocol, std::move(done), alone);
  if (run->size() == 1) {
    network_.engine().schedule_after(Time{}, [run] { run->finish(); });
    return;
  }
  network_.engine().schedule_after(costs.base_latency, [run, alg] { alg->run(run); });
}

Collectives::SendPath Collectives::send_path(DeviceId src, DeviceId dst) const {
  const Cluster& cluster = network_.cluster();
  return {&cluster.route(src, dst), cluster.device(src).node != cluster.device(dst).node};
}

void Collectives::send(DeviceId src, DeviceId dst, double bytes, Protocol protocol, Network::Done done) {
  send(send_path(src, dst), src, dst, bytes, protocol, std::move(done));
}

void Collectives::send(const SendPath& path, DeviceId src, DeviceId dst, double bytes, Protocol protocol,
                       Network::Done done, EventTouches touches) {
  const auto& fits = network_.cluster().config().collective_fits;
  if (const auto& fit = fits[static_cast<std::size_t>(CommKind::sendrecv)]) {
    network_.engine().schedule_after(fitted_time(*fit, CommKind::sendrecv, bytes), std::move(done));
    return;
  }
  const auto costs =
      resolve_protocol(protocols_, protocol, AlgorithmFamily::ring, CommKind::sendrecv, path.multi_node, 2);
  network_.transfer(src, dst, bytes, std::move(done),
                    TransferOptions{costs.base_latency + costs.step(path.route->link_class), costs.efficiency,
                                    path.route, touches});
}

double Collectives::send_estimate_s(DeviceId src, DeviceId dst, double bytes, Protocol protocol) const {
  if (src == dst) return 0;
  const SendPath path = send_path(src, dst);
  const Route& route = *path.route;
  const auto costs =
      resolve_protocol(protocols_, protocol, AlgorithmFamily::ring, CommKind::sendrecv, path.multi_node, 2);
  return (costs.base_latency + costs.step(route.link_class) + route.latency).seconds() +
         bytes / (costs.efficiency * route.bottleneck_Bps);
}

CollectiveResult simulate_collective(const Cluster& cluster, NetworkMode mode, const CollectiveCall& call,
                                     bool fold_nodes) {
  Engine engine;
  auto network = make_network(mode, engine, cluster);
  Collectives collectives(*network);
  if (!fold_nodes) collectives.never_fold();
  CollectiveResult out;
  collectives.start_alone(call, [&out](const CollectiveResult& r) { out = r; });
  engine.run();
  return out;
}

}  // namespace spsim::sim
