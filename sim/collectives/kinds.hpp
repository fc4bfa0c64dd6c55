// Names of collective kinds and NCCL protocols, with parsers for user-facing strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spsim::sim {

enum class CollectiveKind : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all, sendrecv };
inline constexpr int kCollectiveKinds = 5;
[[nodiscard]] const char* collective_kind_name(CollectiveKind k);
[[nodiscard]] std::optional<CollectiveKind> parse_collective_kind(std::string_view name);
inline constexpr const char* kCollectiveKindChoices =
    "all_reduce, reduce_scatter, all_gather, all_to_all, sendrecv";

// NCCL's three wire protocols: Simple (bulk copies, flag per chunk), LL (8-byte flag+data stores,
// half the bytes are flags), LL128 (128-byte lines with an 8-byte flag).
enum class Protocol : std::uint8_t { simple, ll, ll128 };
inline constexpr int kProtocols = 3;
[[nodiscard]] const char* protocol_name(Protocol p);
[[nodiscard]] std::optional<Protocol> parse_protocol(std::string_view name);
inline constexpr const char* kProtocolChoices = "auto, simple, ll, ll128";

}  // namespace spsim::sim
