// Fault injection for the MPI robustness tests: the last rank fails in a chosen way mid-run while the
// others wait for it in a collective; expect_exit.sh checks that the whole job ends promptly.
//   ok       no fault; also starts a 1 s watchdog, cancels it and outlives its deadline: exit 0
//   throw    the last rank throws; main catches it and calls abort_all: non-zero, "spsim: rank R: ..."
//   kill     the last rank sends itself SIGKILL: mpirun sees it die and ends the job
//   timeout  the last rank waits for a message nobody sends; a 1 s watchdog on every rank fires
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/host_storage.hpp"
#include "runtime/mpi/abort.hpp"
#include "runtime/mpi/mpi_comm.hpp"

namespace {

using spsim::rt::Tensor;

void run(spsim::rt::MpiEnvironment& mpi, const std::string& mode) {
  auto world = mpi.world();
  const int victim = world->size() - 1;
  // The default bound of a run; 'timeout' mode relies on a short one.
  auto watchdog = spsim::rt::start_watchdog(mode == "timeout" ? 1.0 : 60.0);
  Tensor t = spsim::rt::make_host_tensor({16}, spsim::rt::DType::f32);
  for (int i = 0; i < 16; ++i) t.data<float>()[i] = static_cast<float>(i);
  world->all_reduce(t).wait();  // every rank gets here: the fault comes mid-run, not at start-up
  if (world->rank() == victim) {
    if (mode == "throw") throw std::runtime_error("injected failure (mode throw)");
    if (mode == "kill") std::raise(SIGKILL);
    if (mode == "timeout") world->recv(t, victim, /*tag=*/99).wait();  // nobody sends this
  }
  world->all_reduce(t).wait();  // the others wait here for the victim
  watchdog->cancel();
  if (mode == "ok") {
    auto short_one = spsim::rt::start_watchdog(1.0);
    short_one->cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past its deadline: it must stay quiet
  }
}

}  // namespace

int main(int argc, char** argv) {
  spsim::rt::MpiEnvironment mpi(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "ok" && mode != "throw" && mode != "kill" && mode != "timeout") {
    if (mpi.world_rank() == 0)
      std::fprintf(stderr, "usage: mpi_fault ok|throw|kill|timeout (got '%s')\n", mode.c_str());
    return 2;
  }
  try {
    run(mpi, mode);
  } catch (const std::exception& e) {
    spsim::rt::abort_all(e.what(), 3);
  }
  return 0;
}
