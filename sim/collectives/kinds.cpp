// Names of NCCL's protocols.
#include "sim/collectives/kinds.hpp"

#include <array>

namespace spsim::sim {

static constexpr std::array<const char*, kProtocols> kProtocolNames = {"simple", "ll", "ll128"};

const char* protocol_name(Protocol p) {
  return kProtocolNames[static_cast<std::size_t>(p)];
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  for (std::size_t i = 0; i < kProtocolNames.size(); ++i)
    if (name == kProtocolNames[i]) return static_cast<Protocol>(i);
  return std::nullopt;
}

std::string protocol_choices() {
  std::string out = "auto";
  for (const char* n : kProtocolNames) out += std::string(", ") + n;
  return out;
}

}  // namespace spsim::sim
