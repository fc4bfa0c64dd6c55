// The derived parts of the config schema: choices the simulator's registries define.
#include "analysis/config/schema.hpp"

#include "sim/collectives/algorithm.hpp"
#include "sim/collectives/kinds.hpp"
#include "sim/network/network.hpp"

namespace spsim::analysis::schema {

namespace {
const sim::AlgorithmRegistry& algorithms() {
  static const sim::AlgorithmRegistry registry = sim::default_algorithms();  // immutable after first use
  return registry;
}
}  // namespace

std::vector<std::string> collectives_keys() {
  std::vector<std::string> keys;
  for (rt::CommKind k : rt::tuned_kinds()) keys.emplace_back(rt::comm_kind_name(k));
  keys.emplace_back("protocol");
  return keys;
}

std::vector<std::string> algorithm_choices(rt::CommKind kind) {
  std::vector<std::string> out = {"auto"};
  for (const auto& name : algorithms().names(kind)) {
    out.push_back(name);
    for (const auto& alias : algorithms().find(name)->aliases) out.push_back(alias);
  }
  return out;
}

std::vector<std::string> protocol_choices() {
  std::vector<std::string> out = {"auto"};
  for (int p = 0; p < sim::kProtocols; ++p)
    out.emplace_back(sim::protocol_name(static_cast<sim::Protocol>(p)));
  return out;
}

std::string canonical_algorithm(const std::string& name) {
  const sim::AlgorithmInfo* info = name == "auto" ? nullptr : algorithms().find(name);
  return info ? info->name : name;
}

std::vector<std::string> networks() {
  return {sim::network_mode_name(sim::NetworkMode::flow),
          sim::network_mode_name(sim::NetworkMode::analytical)};
}

}  // namespace spsim::analysis::schema
