// Placeholder for analysis::simulate until the replay engine (branch 'replay') is merged: a weak
// definition, so the real one replaces it at link time. `spsim run` then reports "no prediction".
// DELETE this file when analysis/simulate.cpp exists.
#include "analysis/simulate.hpp"

#include <stdexcept>

namespace spsim::analysis {

[[gnu::weak]] SimSummary simulate(const Config&, const SimulateOptions&) {
  throw std::runtime_error("the simulator (analysis::simulate) is not part of this build yet");
}

}  // namespace spsim::analysis
