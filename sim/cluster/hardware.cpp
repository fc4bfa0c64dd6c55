// Names of the hardware spec types.
#include "sim/cluster/hardware.hpp"

namespace spsim::sim {

const char* link_class_name(LinkClass c) {
  switch (c) {
    case LinkClass::nvlink:
      return "nvlink";
    case LinkClass::pcie:
      return "pcie";
    case LinkClass::network:
      return "network";
  }
  return "?";
}

}  // namespace spsim::sim
