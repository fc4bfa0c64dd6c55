// Path-aware JSON field reading: every failure is an InputError naming the JSON path, the bad value and
// what was expected. Internal to the config parser (it speaks nlohmann::json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace spsim::analysis {

// Configs keep the user's key order (sweep axes expand in the order they are written).
using Json = nlohmann::ordered_json;

// "workload" + "seq_len" -> "workload.seq_len"; a root ending in ':' (a file name) takes no dot.
[[nodiscard]] std::string json_child(const std::string& path, std::string_view key);
// "sweep.workload.seq_len" + 2 -> "sweep.workload.seq_len[2]".
[[nodiscard]] std::string json_index(const std::string& path, std::size_t index);
// A value as an error message shows it: string "abc", number 1.5, boolean true, array, object, null.
[[nodiscard]] std::string describe_json(const Json& value);

// Reads a JSON file; a missing or unreadable file or malformed JSON (with line and column) is an
// InputError at `where`.
[[nodiscard]] Json read_json_file(const std::filesystem::path& path, const std::string& where);
// Parses JSON text; malformed JSON (with line and column) is an InputError at `where`.
[[nodiscard]] Json parse_json_text(const std::string& text, const std::string& where);

// Checks of one value at `where`.
[[nodiscard]] std::int64_t expect_integer(const Json& value, const std::string& where, std::int64_t min);
[[nodiscard]] std::uint64_t expect_unsigned(const Json& value, const std::string& where);
[[nodiscard]] double expect_positive_number(const Json& value, const std::string& where);  // finite, > 0
[[nodiscard]] double expect_probability(const Json& value, const std::string& where);  // 0 <= p < 1
[[nodiscard]] std::string expect_string(const Json& value, const std::string& where);
[[nodiscard]] bool expect_bool(const Json& value, const std::string& where);
// A string from `choices` ("unknown value 'x'; valid choices: ...").
[[nodiscard]] std::string expect_choice(const Json& value, const std::string& where,
                                        const std::vector<std::string>& choices);

// One JSON object at `path` whose keys must all be in `allowed` (checked on construction).
// Holds a reference: the Json must outlive the reader.
class JsonObject {
 public:
  JsonObject(const Json& value, std::string path, const std::vector<std::string>& allowed);

  [[nodiscard]] bool has(std::string_view key) const;
  [[nodiscard]] const Json& at(std::string_view key) const;  // InputError if missing
  [[nodiscard]] std::string path(std::string_view key) const { return json_child(path_, key); }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const Json& value() const { return value_; }

  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t min) const;
  [[nodiscard]] std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t min) const;
  [[nodiscard]] std::uint64_t unsigned_or(std::string_view key, std::uint64_t fallback) const;
  [[nodiscard]] std::string string(std::string_view key) const;
  [[nodiscard]] std::string string_or(std::string_view key, const std::string& fallback) const;
  [[nodiscard]] std::string choice_or(std::string_view key, const std::vector<std::string>& choices,
                                      const std::string& fallback) const;
  [[nodiscard]] bool boolean_or(std::string_view key, bool fallback) const;
  // A nested object; an absent optional section reads as an empty object.
  [[nodiscard]] JsonObject object(std::string_view key, const std::vector<std::string>& allowed) const;
  [[nodiscard]] JsonObject object_or_empty(std::string_view key,
                                           const std::vector<std::string>& allowed) const;

 private:
  const Json& value_;
  std::string path_;
};

}  // namespace spsim::analysis
