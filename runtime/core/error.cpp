// The shared pieces of error messages.
#include "runtime/core/error.hpp"

namespace spsim {

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace spsim
