// The shared pieces of error messages.
#include "runtime/core/error.hpp"

namespace spsim {

std::string InputError::printable(std::string text, std::size_t limit) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* digits = "0123456789abcdef";
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 0xf];
    } else {
      out += ch;
    }
  }
  if (out.size() <= limit) return out;
  // Cut on UTF-8 character boundaries (never inside a multi-byte sequence).
  auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(out[i]) & 0xc0) == 0x80; };
  std::size_t head = limit - limit / 2, tail_start = out.size() - limit / 2;
  while (head > 0 && continuation(head)) --head;
  while (tail_start < out.size() && continuation(tail_start)) ++tail_start;
  return out.substr(0, head) + " ... " + out.substr(tail_start);
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace spsim
