// The strategy registry: lookup by name, option validation, and the list of built-in strategies.
#include <algorithm>
#include <stdexcept>

#include "runtime/core/error.hpp"
#include "strategies/strategy.hpp"

namespace spsim::strategies {

// One line per strategy family; each lives in its own file.
void register_rsa(Registry& registry);
void register_ulysses(Registry& registry);
void register_ring(Registry& registry);
void register_allgather_kv(Registry& registry);
void register_usp(Registry& registry);

const Registry& builtin() {
  static const Registry registry = [] {
    Registry r;
    register_rsa(r);
    register_ulysses(r);
    register_ring(r);
    register_allgather_kv(r);
    register_usp(r);
    return r;
  }();
  return registry;
}

void Registry::add(StrategyInfo info) {
  if (find(info.name)) throw std::logic_error("strategy registry: duplicate strategy '" + info.name + "'");
  if (static_cast<bool>(info.closed_form) == !info.no_closed_form.empty())
    throw std::logic_error("strategy '" + info.name +
                           "' must register a closed form or the reason it has none");
  if (static_cast<bool>(info.memory) == !info.no_memory.empty())
    throw std::logic_error("strategy '" + info.name +
                           "' must register a memory model or the reason it has none");
  infos_.push_back(std::move(info));
}

const StrategyInfo* Registry::find(const std::string& name) const {
  auto it = std::find_if(infos_.begin(), infos_.end(), [&](const StrategyInfo& i) { return i.name == name; });
  return it == infos_.end() ? nullptr : &*it;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& i : infos_) out.push_back(i.name);
  return out;
}

Options complete_option_values(const std::vector<OptionSpec>& specs, const Options& given,
                               const std::string& owner, const std::string& where) {
  Options out;
  for (const auto& [key, value] : given) {
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& o) { return o.name == key; });
    if (spec == specs.end()) {
      std::vector<std::string> names;
      for (const auto& o : specs) names.push_back(o.name);
      throw InputError(where + "." + key, "unknown option '" + key + "' for " + owner +
                                              "; valid options: " + (names.empty() ? "none" : join_names(names)));
    }
    if (!spec->choices.empty()) {
      if (std::find(spec->choices.begin(), spec->choices.end(), value) == spec->choices.end())
        throw InputError(where + "." + key,
                         "unknown value '" + value + "'; valid choices: " + join_names(spec->choices));
    } else if (value.empty() ||
               !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw InputError(where + "." + key, "'" + value + "' is not a non-negative integer");
    }
    out[key] = value;
  }
  for (const auto& o : specs)
    if (!out.count(o.name)) out[o.name] = o.default_value;
  return out;
}

Options Registry::complete_options(const StrategyInfo& info, const Options& given,
                                   const std::string& where) const {
  return complete_option_values(info.options, given, "strategy '" + info.name + "'", where);
}

}  // namespace spsim::strategies
