// NCCL's wire protocols and their names; collective kinds are the runtime's vocabulary
// (runtime/core/comm_kind.hpp), used here under the simulator's namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/core/comm_kind.hpp"

namespace spsim::sim {

using rt::CommKind;

// NCCL's three wire protocols: Simple (bulk copies, flag per chunk), LL (8-byte flag+data stores,
// half the bytes are flags), LL128 (128-byte lines with an 8-byte flag).
enum class Protocol : std::uint8_t { simple, ll, ll128 };
inline constexpr int kProtocols = 3;
[[nodiscard]] const char* protocol_name(Protocol p);
[[nodiscard]] std::optional<Protocol> parse_protocol(std::string_view name);
// "auto, simple, ll, ll128": the protocol names a config or `--protocol` accepts ("auto" = the tuner's).
[[nodiscard]] std::string protocol_choices();

}  // namespace spsim::sim
