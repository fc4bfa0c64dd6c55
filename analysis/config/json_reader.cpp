// Path-aware JSON field reading (see json_reader.hpp).
#include "analysis/config/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <system_error>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace fs = std::filesystem;

std::string json_child(const std::string& path, std::string_view key) {
  if (path.empty() || path.back() == ':') return path + std::string(key);
  return path + "." + std::string(key);
}

std::string json_index(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string describe_json(const Json& value) {
  constexpr std::size_t max_shown = 60;  // keep messages one line even for a pasted array
  auto shown = [&](std::string text) {
    return text.size() > max_shown ? text.substr(0, max_shown) + "..." : text;
  };
  if (value.is_string()) return "string " + shown(value.dump());
  if (value.is_number()) return "number " + value.dump();
  if (value.is_boolean()) return "boolean " + value.dump();
  if (value.is_null()) return "null";
  if (value.is_array()) return "array " + shown(value.dump());
  return "object " + shown(value.dump());
}

namespace {

constexpr std::size_t kMaxJsonDepth = 64;

struct LineColumn {
  std::size_t line = 1, column = 1;
};

// The offset of the first bracket that opens level kMaxJsonDepth + 1 outside strings, if any: nlohmann
// parses any depth, but dumping or destroying a value thousands of levels deep exhausts the stack.
std::optional<std::size_t> nested_too_deep(const std::string& text) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// nlohmann's parse_error::byte is the 1-based index of the last byte read.
LineColumn line_column(const std::string& text, std::size_t byte) {
  const std::size_t offset = std::min(byte == 0 ? 0 : byte - 1, text.size());
  LineColumn lc;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      line_start = i + 1;
    }
  }
  lc.column = offset - line_start + 1;
  return lc;
}

// The part of nlohmann's message after "parse error at line L, column C: ".
std::string parse_error_detail(const std::string& what) {
  const auto at = what.find("parse error");
  if (at == std::string::npos) return what;
  const auto colon = what.find(": ", at);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

std::string quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

}  // namespace

namespace {

// `text` parsed; malformed JSON is an InputError at `where` with its line and column (`what` names the
// text in the message: "in 'file.json'" or empty).
Json parse_located(const std::string& text, const std::string& where, const std::string& what) {
  if (const auto deep = nested_too_deep(text)) {
    const auto lc = line_column(text, *deep + 1);
    throw InputError(where, "JSON" + what + " nested deeper than " + std::to_string(kMaxJsonDepth) +
                                " arrays or objects at line " + std::to_string(lc.line) + ", column " +
                                std::to_string(lc.column) + "; a config is a few levels deep");
  }
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const auto lc = line_column(text, e.byte);
    throw InputError(where, "malformed JSON" + what + " at line " + std::to_string(lc.line) + ", column " +
                                std::to_string(lc.column) + ": " + parse_error_detail(e.what()));
  } catch (const nlohmann::json::exception& e) {  // out_of_range.406: a number too large for a double
    const std::string text = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e400'"
    const auto close = text.find("] ");
    throw InputError(where, "invalid JSON" + what + ": " +
                                (close == std::string::npos ? text : text.substr(close + 2)) +
                                " (numbers must fit a double, integers a 64-bit integer)");
  }
}

}  // namespace

Json read_json_file(const fs::path& path, const std::string& where) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(where, "no such file " + quoted(path));
  if (fs::is_directory(path, ec)) throw InputError(where, quoted(path) + " is a directory, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(where, "cannot open " + quoted(path) + " for reading");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(where, "cannot read " + quoted(path));
  return parse_located(text, where, " in " + quoted(path));
}

Json parse_json_text(const std::string& text, const std::string& where) {
  return parse_located(text, where, "");
}

std::int64_t expect_integer(const Json& value, const std::string& where, std::int64_t min) {
  if (!value.is_number_integer()) throw InputError(where, "expected an integer, got " + describe_json(value));
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max())
    throw InputError(where, "integer " + value.dump() + " is out of range");
  const auto v = value.get<std::int64_t>();
  if (v < min) throw InputError(where, "must be >= " + std::to_string(min) + ", got " + std::to_string(v));
  return v;
}

std::uint64_t expect_unsigned(const Json& value, const std::string& where) {
  if (!value.is_number_integer())
    throw InputError(where, "expected a non-negative integer, got " + describe_json(value));
  // A parsed non-negative integer is stored unsigned; one built in code (or a sweep value) may be signed.
  if (!value.is_number_unsigned() && value.get<std::int64_t>() < 0)
    throw InputError(where, "must be >= 0, got " + value.dump());
  return value.get<std::uint64_t>();
}

double expect_positive_number(const Json& value, const std::string& where) {
  if (!value.is_number()) throw InputError(where, "expected a number > 0, got " + describe_json(value));
  const double v = value.get<double>();
  if (!(v > 0) || !std::isfinite(v))
    throw InputError(where, "must be a finite number > 0, got " + value.dump());
  return v;
}

double expect_probability(const Json& value, const std::string& where) {
  if (!value.is_number() || !(value.get<double>() >= 0 && value.get<double>() < 1))
    throw InputError(where, "expected a probability >= 0 and < 1 (0.1 = drop one element in ten), got " +
                                describe_json(value));
  return value.get<double>();
}

std::string expect_string(const Json& value, const std::string& where) {
  if (!value.is_string()) throw InputError(where, "expected a string, got " + describe_json(value));
  return value.get<std::string>();
}

bool expect_bool(const Json& value, const std::string& where) {
  if (!value.is_boolean()) throw InputError(where, "expected true or false, got " + describe_json(value));
  return value.get<bool>();
}

std::string expect_choice(const Json& value, const std::string& where,
                          const std::vector<std::string>& choices) {
  if (!value.is_string())
    throw InputError(where,
                     "expected a string (one of " + join_names(choices) + "), got " + describe_json(value));
  auto s = value.get<std::string>();
  if (std::find(choices.begin(), choices.end(), s) == choices.end())
    throw InputError(where, "unknown value '" + s + "'; valid choices: " + join_names(choices));
  return s;
}

JsonObject::JsonObject(const Json& value, std::string path, const std::vector<std::string>& allowed)
    : value_(value), path_(std::move(path)) {
  if (!value_.is_object()) throw InputError(path_, "expected an object, got " + describe_json(value_));
  for (const auto& item : value_.items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      throw InputError(json_child(path_, item.key()),
                       "unknown key '" + item.key() + "'; valid keys: " + join_names(allowed));
  }
}

bool JsonObject::has(std::string_view key) const {
  return value_.contains(key);
}

const Json& JsonObject::at(std::string_view key) const {
  auto it = value_.find(key);
  if (it == value_.end()) throw InputError(path(key), "missing required key '" + std::string(key) + "'");
  return *it;
}

std::int64_t JsonObject::integer(std::string_view key, std::int64_t min) const {
  return expect_integer(at(key), path(key), min);
}

std::int64_t JsonObject::integer_or(std::string_view key, std::int64_t fallback, std::int64_t min) const {
  return has(key) ? integer(key, min) : fallback;
}

std::uint64_t JsonObject::unsigned_or(std::string_view key, std::uint64_t fallback) const {
  return has(key) ? expect_unsigned(at(key), path(key)) : fallback;
}

std::string JsonObject::string(std::string_view key) const {
  return expect_string(at(key), path(key));
}

std::string JsonObject::string_or(std::string_view key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

std::string JsonObject::choice_or(std::string_view key, const std::vector<std::string>& choices,
                                  const std::string& fallback) const {
  return has(key) ? expect_choice(at(key), path(key), choices) : fallback;
}

bool JsonObject::boolean_or(std::string_view key, bool fallback) const {
  return has(key) ? expect_bool(at(key), path(key)) : fallback;
}

JsonObject JsonObject::object(std::string_view key, const std::vector<std::string>& allowed) const {
  return JsonObject(at(key), path(key), allowed);
}

JsonObject JsonObject::object_or_empty(std::string_view key, const std::vector<std::string>& allowed) const {
  static const Json empty = Json::object();  // immutable; the reader keeps a reference to it
  return JsonObject(has(key) ? at(key) : empty, path(key), allowed);
}

}  // namespace spsim::analysis
