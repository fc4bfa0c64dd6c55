// InputError: bad user input (config, arguments, files). The CLI turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace spsim {

// `where` names the JSON path ("strategy.options.grad_reduction"), argument ("--op") or file.
// The message should say the bad value and the valid choices.
class InputError : public std::runtime_error {
 public:
  InputError(std::string where, const std::string& message)
      : std::runtime_error(where.empty() ? message : where + ": " + message), where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace spsim
