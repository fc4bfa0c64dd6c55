// InputError: bad user input (config, arguments, files). The CLI turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace spsim {

// `where` names the JSON path ("strategy.options.grad_reduction"), argument ("--op") or file; the
// message says the bad value and the valid choices. what() is "where: message" (or the message alone).
// Both are kept to one printable line of bounded length whatever the input held: control characters
// are escaped (\n, \x01) and an overlong text keeps its start and its end (where the valid choices are).
class InputError : public std::runtime_error {
 public:
  InputError(std::string where, std::string message)
      : InputError(Clean{printable(std::move(where), 300), printable(std::move(message), 2000)}) {}
  [[nodiscard]] const std::string& where() const { return where_; }
  [[nodiscard]] const std::string& message() const { return message_; }
  // The same message at another place (e.g. a parser's relative path "nodes" reported as "--nodes").
  [[nodiscard]] InputError at(std::string where) const { return InputError(std::move(where), message_); }

 private:
  struct Clean {
    std::string where, message;
  };
  explicit InputError(Clean c)
      : std::runtime_error(c.where.empty() ? c.message : c.where + ": " + c.message),
        where_(std::move(c.where)),
        message_(std::move(c.message)) {}
  // `text` with control characters escaped and, past `limit` bytes, its middle replaced by " ... ".
  static std::string printable(std::string text, std::size_t limit);
  std::string where_;
  std::string message_;
};

// A shape or world too large for the memory this process may use (estimated before allocating, or an
// allocation that failed). Bad input too (exit 2), but unlike the others it depends on the machine:
// `compare` fails as a whole on one rather than keep a row whose content would vary with the host.
class ResourceError : public InputError {
 public:
  using InputError::InputError;
};

// "a, b, c" (or "(none)"), for the "valid choices" part of a message.
[[nodiscard]] std::string join_names(const std::vector<std::string>& names);

}  // namespace spsim
