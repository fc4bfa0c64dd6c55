// Validated reads of JSON fields for the cluster and hardware parsers; every error names the JSON path.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace spsim::analysis::fields {

// "a.b" + "c" → "a.b.c"; an empty prefix yields just the key.
[[nodiscard]] std::string join_path(const std::string& prefix, std::string_view key);

// Throws InputError unless `j` is an object whose keys are all in `allowed`.
void require_object(const nlohmann::json& j, const std::string& path);
void check_keys(const nlohmann::json& j, const std::string& path,
                const std::vector<std::string_view>& allowed);

[[nodiscard]] std::string get_string(const nlohmann::json& j, const std::string& path, std::string_view key);
[[nodiscard]] double get_number(const nlohmann::json& j, const std::string& path, std::string_view key);
// A number >= 0 (or > 0 when `strictly_positive`).
[[nodiscard]] double get_nonnegative(const nlohmann::json& j, const std::string& path, std::string_view key,
                                     bool strictly_positive = false);
// A latency in microseconds: a number in [0, 1e9] (a thousand seconds: well past any link or kernel).
[[nodiscard]] double get_latency_us(const nlohmann::json& j, const std::string& path, std::string_view key);
// An integer in [1, max].
[[nodiscard]] int get_positive_int(const nlohmann::json& j, const std::string& path, std::string_view key,
                                   int max = 1'000'000);
[[nodiscard]] bool get_bool(const nlohmann::json& j, const std::string& path, std::string_view key);

}  // namespace spsim::analysis::fields
