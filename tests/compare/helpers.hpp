// Helpers for the compare tests: the analysis tests' temporary folder, and whole-file reads.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/analysis/helpers.hpp"

namespace spsim::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace spsim::test
