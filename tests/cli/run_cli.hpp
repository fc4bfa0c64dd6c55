// Runs the spsim binary in a shell and captures its exit code and output (stdout + stderr).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace spsim_test {

struct CliResult {
  int code = -1;
  std::string out;
};

inline CliResult run_shell(const std::string& cmd) {
  CliResult r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe)) r.out += buf.data();
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline CliResult run_spsim(const std::string& args) { return run_shell(std::string(SPSIM_BINARY) + " " + args); }

inline std::string source_path(const std::string& rel) { return std::string(SPSIM_SOURCE_DIR) + "/" + rel; }

// A fresh temporary directory under the build tree.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::path(SPSIM_BUILD_DIR) / "test-tmp" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace spsim_test
