// test_gpu's main(): runs every suite when a CUDA GPU is usable; otherwise runs only the host checks
// of the test references and reports a skip (exit 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#ifdef SPSIM_WITH_CUDA
#include "runtime/cuda/cuda_device.hpp"
#endif

namespace {
constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE for this test (tests/gpu/tests.cmake)

// Why the GPU suites cannot run here, or nullptr when they can.
const char* skip_reason() {
#ifndef SPSIM_WITH_CUDA
  return "spsim was built without the CUDA backend (SPSIM_WITH_CUDA off or CUDA/NCCL not found)";
#else
  if (spsim::rt::cuda_device_count() == 0)
    return "no CUDA GPU is visible (no driver or no device); the CUDA backend is compiled but untested";
  return nullptr;
#endif
}
}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const char* reason = skip_reason();
  if (!reason) return context.run();
  // Without a GPU only the host self-checks of the test references run (suite "host"); the GPU
  // suites are reported as skipped, never as passed.
  context.addFilter("test-suite", "host");
  const int rc = context.run();
  if (rc != 0 || context.shouldExit()) return rc;
  std::printf("SKIPPED: %s\n", reason);
  return kSkipped;
}
