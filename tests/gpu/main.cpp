// test_gpu's main(): runs the doctest suites when a CUDA GPU is usable, else reports a skip (exit 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#ifdef SPSIM_WITH_CUDA
#include "runtime/cuda/cuda_device.hpp"
#endif

namespace {
constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE for this test (tests/gpu/tests.cmake)
}

int main(int argc, char** argv) {
#ifndef SPSIM_WITH_CUDA
  (void)argc;
  (void)argv;
  std::printf(
      "SKIPPED: spsim was built without the CUDA backend (SPSIM_WITH_CUDA off or CUDA/NCCL not found)\n");
  return kSkipped;
#else
  if (spsim::rt::cuda_device_count() == 0) {
    std::printf(
        "SKIPPED: no CUDA GPU is visible (no driver or no device); the CUDA backend is compiled but "
        "untested\n");
    return kSkipped;
  }
  doctest::Context context(argc, argv);
  return context.run();
#endif
}
