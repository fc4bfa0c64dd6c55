// Names of collective kinds and protocols.
#include "sim/collectives/kinds.hpp"

#include <array>

namespace spsim::sim {

static constexpr std::array<const char*, kCollectiveKinds> kKindNames = {
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "sendrecv"};
static constexpr std::array<const char*, kProtocols> kProtocolNames = {"simple", "ll", "ll128"};

const char* collective_kind_name(CollectiveKind k) {
  return kKindNames[static_cast<std::size_t>(k)];
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i)
    if (name == kKindNames[i]) return static_cast<CollectiveKind>(i);
  if (name == "p2p") return CollectiveKind::sendrecv;
  return std::nullopt;
}

const char* protocol_name(Protocol p) {
  return kProtocolNames[static_cast<std::size_t>(p)];
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  for (std::size_t i = 0; i < kProtocolNames.size(); ++i)
    if (name == kProtocolNames[i]) return static_cast<Protocol>(i);
  return std::nullopt;
}

}  // namespace spsim::sim
