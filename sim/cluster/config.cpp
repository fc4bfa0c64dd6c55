// Names of the cluster config's device kinds.
#include "sim/cluster/config.hpp"

namespace spsim::sim {

const char* device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::gpu:
      return "gpu";
    case DeviceKind::nvswitch:
      return "nvswitch";
    case DeviceKind::pcie_switch:
      return "pcie_switch";
    case DeviceKind::nic:
      return "nic";
    case DeviceKind::network_switch:
      return "switch";
  }
  return "?";
}

}  // namespace spsim::sim
