// How much host memory this process may still allocate, for the commands that estimate what they need
// before they allocate it (check, run, simulate, compare).
#pragma once

#include <new>
#include <optional>
#include <string>
#include <system_error>

#include "runtime/core/error.hpp"

namespace spsim::rt {

struct MemoryLimit {
  double bytes = 0;
  std::string source;  // what set it: "--max-memory", "MemAvailable", "RLIMIT_AS", "cgroup memory.max"
};

// The smallest of: the kernel's estimate of memory available without swapping (MemAvailable in
// /proc/meminfo), the address-space limit (RLIMIT_AS) less what the process maps already, and the
// cgroup v2 limit (memory.max less memory.current). `requested` (--max-memory) replaces them all.
// Where none can be read, +infinity.
[[nodiscard]] MemoryLimit host_memory_limit(std::optional<double> requested = std::nullopt);

// Bytes of this process in memory now (/proc/self/statm's resident pages); 0 where it cannot be read.
[[nodiscard]] double resident_bytes();

// Runs `f`; an allocation failure inside it (or a thread that could not be started for lack of
// memory) becomes a ResourceError at "memory" naming `stage` ("tracing the step", ...), never an
// internal error.
template <class F>
decltype(auto) in_stage(const std::string& stage, F&& f) {
  auto out_of_memory = [&] {
    return ResourceError(
        "memory", "out of memory while " + stage +
                      ": these shapes need more memory than this process can get "
                      "(`spsim simulate` predicts large shapes without data; --max-memory sets the limit)");
  };
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw out_of_memory();
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory)
      throw out_of_memory();
    throw;
  }
}

// "16G", "512M", "64K", "2.5G", "1000000000" (binary multiples) in bytes; nullopt for anything else.
[[nodiscard]] std::optional<double> parse_memory_size(const std::string& text);

}  // namespace spsim::rt
