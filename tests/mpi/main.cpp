// main() of test_mpi: doctest between MPI_Init and MPI_Finalize; ranks other than 0 print only failures.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#ifdef SPSIM_WITH_MPI
#include "runtime/mpi/abort.hpp"
#include "runtime/mpi/mpi_comm.hpp"
#endif

int main(int argc, char** argv) {
#ifdef SPSIM_WITH_MPI
  spsim::rt::MpiEnvironment mpi(argc, argv);
  // A check that fails or throws on one rank only can leave the others waiting in the next collective:
  // bound the run so that it fails instead of hanging (the suite takes about a second).
  const auto watchdog = spsim::rt::start_watchdog(120.0);
  doctest::Context context(argc, argv);
  if (mpi.world_rank() != 0) context.setOption("minimal", true);
  // mpirun exits non-zero if any rank does, so a failure on any rank fails the ctest entry.
  return context.run();
#else
  return doctest::Context(argc, argv).run();
#endif
}
