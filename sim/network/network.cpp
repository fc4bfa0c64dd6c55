// Network factory and mode names.
#include "sim/network/network.hpp"

#include "sim/network/flow.hpp"

namespace spsim::sim {

std::unique_ptr<Network> make_analytical_network(Engine& engine, const Cluster& cluster);  // analytical.cpp

std::optional<NetworkMode> parse_network_mode(std::string_view name) {
  if (name == "flow") return NetworkMode::flow;
  if (name == "analytical") return NetworkMode::analytical;
  return std::nullopt;
}

const char* network_mode_name(NetworkMode m) {
  return m == NetworkMode::flow ? "flow" : "analytical";
}

std::unique_ptr<Network> make_network(NetworkMode mode, Engine& engine, const Cluster& cluster) {
  if (mode == NetworkMode::analytical) return make_analytical_network(engine, cluster);
  return std::make_unique<FlowNetwork>(engine, cluster);
}

}  // namespace spsim::sim
