// InputError: bad user input (config, arguments, files). The CLI turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace spsim {

// `where` names the JSON path ("strategy.options.grad_reduction"), argument ("--op") or file; the
// message says the bad value and the valid choices. what() is "where: message" (or the message alone).
class InputError : public std::runtime_error {
 public:
  InputError(std::string where, std::string message)
      : std::runtime_error(where.empty() ? message : where + ": " + message),
        where_(std::move(where)),
        message_(std::move(message)) {}
  [[nodiscard]] const std::string& where() const { return where_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  // The same message at another place (e.g. a parser's relative path "nodes" reported as "--nodes").
  [[nodiscard]] InputError at(std::string where) const { return InputError(std::move(where), message_); }

 private:
  std::string where_;
  std::string message_;
};

// "a, b, c" (or "(none)"), for the "valid choices" part of a message.
[[nodiscard]] std::string join_names(const std::vector<std::string>& names);

}  // namespace spsim
