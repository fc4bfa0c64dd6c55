// Network: moves bytes between devices of a Cluster on an Engine (flow-level or analytical model).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "sim/cluster/cluster.hpp"
#include "sim/engine.hpp"

namespace spsim::sim {

enum class NetworkMode : std::uint8_t {
  flow,        // max-min fair sharing of every link among the transfers crossing it (network/flow.cpp)
  analytical,  // per-hop α-β, no contention (network/analytical.cpp)
};
[[nodiscard]] std::optional<NetworkMode> parse_network_mode(std::string_view name);  // "flow" | "analytical"
[[nodiscard]] const char* network_mode_name(NetworkMode m);

struct TransferOptions {
  Time extra_latency{};   // added to the route's latency (e.g. a protocol's per-step cost)
  double efficiency = 1;  // payload fraction: the transfer occupies bytes / efficiency of link capacity
  // cluster().route(src, dst), where the caller has it already (null: the network looks it up).
  const Route* route = nullptr;
  // The state `done` will work on, for the engine's touch-ahead (Engine::schedule_at): the flow model
  // asks for it one event before the flow's start or end, with the flow's links' lists (stage 0 of
  // these touches only).
  EventTouches done_touches{};
};

struct NetworkStats {
  std::uint64_t transfers = 0;     // transfer() calls
  std::uint64_t rate_changes = 0;  // flow model: times a flow's fair rate was recomputed to a new value
  std::uint64_t arrived = 0;       // transfers whose `done` has run
  [[nodiscard]] std::uint64_t in_flight() const { return transfers - arrived; }
};

// A transfer of n bytes along route r takes  latency(r) + extra_latency  and then moves
// n / efficiency bytes at the model's rate; `done` runs on the engine when the last byte arrives.
// Zero-byte transfers take only the latency; a transfer to the same device takes only the extra
// latency. Bytes may be fractional (a collective's n / P chunks), so closed forms hold exactly.
class Network {
 public:
  using Done = Callback;  // move-only (sim/callback.hpp)
  virtual ~Network() = default;
  virtual void transfer(DeviceId src, DeviceId dst, double bytes, Done done,
                        const TransferOptions& options = {}) = 0;
  [[nodiscard]] virtual std::size_t active_flows() const = 0;
  [[nodiscard]] virtual NetworkMode mode() const = 0;
  [[nodiscard]] virtual const NetworkStats& stats() const = 0;
  [[nodiscard]] virtual const Cluster& cluster() const = 0;
  [[nodiscard]] virtual Engine& engine() = 0;
};

// The engine and cluster must outlive the network.
[[nodiscard]] std::unique_ptr<Network> make_network(NetworkMode mode, Engine& engine, const Cluster& cluster);

}  // namespace spsim::sim
