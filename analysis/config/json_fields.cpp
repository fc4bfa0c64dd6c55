// Validated reads of JSON fields: type and range checks with the JSON path in every message.
#include "analysis/config/json_fields.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/core/error.hpp"

namespace spsim::analysis::fields {

std::string join_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

void require_object(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw InputError(path, "expected a JSON object, got " + j.dump());
}

void check_keys(const nlohmann::json& j, const std::string& path,
                const std::vector<std::string_view>& allowed) {
  require_object(j, path);
  for (const auto& [key, value] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::vector<std::string> names(allowed.begin(), allowed.end());
    throw InputError(join_path(path, key), "unknown key '" + key + "'; valid keys: " + join_names(names));
  }
}

namespace {
const nlohmann::json& field(const nlohmann::json& j, const std::string& path, std::string_view key) {
  const auto it = j.find(std::string(key));
  if (it == j.end()) throw InputError(join_path(path, key), "missing required key");
  return *it;
}
}  // namespace

std::string get_string(const nlohmann::json& j, const std::string& path, std::string_view key) {
  const auto& v = field(j, path, key);
  if (!v.is_string()) throw InputError(join_path(path, key), "expected a string, got " + v.dump());
  return v.get<std::string>();
}

double get_number(const nlohmann::json& j, const std::string& path, std::string_view key) {
  const auto& v = field(j, path, key);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw InputError(join_path(path, key), "expected a finite number, got " + v.dump());
  return v.get<double>();
}

double get_nonnegative(const nlohmann::json& j, const std::string& path, std::string_view key,
                       bool strictly_positive) {
  const double x = get_number(j, path, key);
  if (x < 0 || (strictly_positive && x == 0))
    throw InputError(join_path(path, key), "must be " + std::string(strictly_positive ? "> 0" : ">= 0") +
                                               ", got " + field(j, path, key).dump());
  return x;
}

double get_latency_us(const nlohmann::json& j, const std::string& path, std::string_view key) {
  const double us = get_nonnegative(j, path, key);
  if (us > 1e9)
    throw InputError(join_path(path, key),
                     "must be at most 1e9 microseconds, got " + field(j, path, key).dump());
  return us;
}

int get_positive_int(const nlohmann::json& j, const std::string& path, std::string_view key, int max) {
  const auto& v = field(j, path, key);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
    throw InputError(join_path(path, key),
                     "must be an integer in [1, " + std::to_string(max) + "], got " + v.dump());
  return v.get<int>();
}

bool get_bool(const nlohmann::json& j, const std::string& path, std::string_view key) {
  const auto& v = field(j, path, key);
  if (!v.is_boolean()) throw InputError(join_path(path, key), "expected true or false, got " + v.dump());
  return v.get<bool>();
}

}  // namespace spsim::analysis::fields
