// Host memory limits: /proc/meminfo, RLIMIT_AS, cgroup v2.
#include "runtime/host_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace spsim::rt {

namespace {

// A "Key:   N kB" line of /proc/meminfo, in bytes.
std::optional<double> meminfo(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    double kb = 0;
    if (fields >> kb) return kb * 1024;
  }
  return std::nullopt;
}

std::optional<double> number_file(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Bytes this process maps now (the first field of /proc/self/statm, in pages).
double mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  in >> pages;
  return pages * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

double resident_bytes() {
  std::ifstream in("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

MemoryLimit host_memory_limit(std::optional<double> requested) {
  if (requested) return {*requested, "--max-memory"};
  MemoryLimit out{std::numeric_limits<double>::infinity(), "no limit found"};
  auto consider = [&](std::optional<double> bytes, const char* source) {
    if (bytes && *bytes < out.bytes) out = {std::max(0.0, *bytes), source};
  };
  consider(meminfo("MemAvailable"), "MemAvailable in /proc/meminfo");
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    consider(static_cast<double>(as.rlim_cur) - mapped_bytes(), "the address-space limit RLIMIT_AS");
  const auto max = number_file("/sys/fs/cgroup/memory.max"), current = number_file("/sys/fs/cgroup/memory.current");
  if (max) consider(*max - current.value_or(0), "the cgroup's memory.max");
  return out;
}

std::optional<double> parse_memory_size(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string suffix = text.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    mult = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "t" || suffix == "TiB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    return std::nullopt;
  if (!(v > 0) || !std::isfinite(v * mult)) return std::nullopt;
  return v * mult;
}

}  // namespace spsim::rt
