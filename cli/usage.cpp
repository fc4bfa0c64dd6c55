// Usage errors: unknown subcommands and options with the valid choices and the nearest match.
#include "cli/usage.hpp"

#include <algorithm>

#include "runtime/core/error.hpp"

namespace spsim::cli {

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> option_names(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const auto* opt : sub.get_options())
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  std::sort(names.begin(), names.end());
  return names;
}

// The option `token` names ("--jobs", "--jobs=2", "-h"), or nullptr.
const CLI::Option* option_of(const CLI::App& sub, const std::string& token) {
  const std::string name = token.substr(0, token.find('='));
  for (const auto* opt : sub.get_options()) {
    for (const auto& l : opt->get_lnames())
      if (name == "--" + l) return opt;
    for (const auto& s : opt->get_snames())
      if (name == "-" + s) return opt;
  }
  return nullptr;
}

std::string with_suggestion(std::string message, const std::string& typed,
                            const std::vector<std::string>& choices) {
  const std::string near = nearest(typed, choices);
  return near.empty() ? message : message + " (did you mean '" + near + "'?)";
}

}  // namespace

std::string nearest(const std::string& typed, const std::vector<std::string>& choices) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : choices) {
    const std::size_t d = edit_distance(typed, c);
    if (d < best_d) best = c, best_d = d;
  }
  const std::size_t longer = std::max(typed.size(), best.size());
  return best_d >= 1 && best_d <= std::max<std::size_t>(1, longer / 3) ? best : "";
}

std::string usage_message(const CLI::App& app, const std::vector<std::string>& args,
                          const CLI::ParseError& error) {
  const auto subs = subcommand_names(app);
  const CLI::App* sub = nullptr;
  std::size_t sub_at = 0;
  for (std::size_t i = 0; i < args.size() && !sub; ++i) {
    if (!args[i].empty() && args[i][0] == '-') continue;
    if (std::find(subs.begin(), subs.end(), args[i]) == subs.end())
      return with_suggestion("unknown subcommand '" + args[i] + "'; valid subcommands: " + join_names(subs),
                             args[i], subs);
    sub = app.get_subcommand(args[i]);
    sub_at = i;
  }
  if (!sub) {
    for (const auto& a : args)
      if (a != "--help" && a != "-h" && a != "--version")
        return "unknown option '" + a + "' before the subcommand; valid subcommands: " + join_names(subs) +
               " (spsim --help, spsim SUBCOMMAND --help)";
    return "a subcommand is required; valid subcommands: " + join_names(subs) + " (spsim --help)";
  }
  const std::string name = sub->get_name();
  // Unexpected arguments: name the first one that is not an option of the subcommand (skipping the
  // values of the options before it, and everything after "--").
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    for (std::size_t i = sub_at + 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--") break;
      if (a.size() < 2 || a[0] != '-') continue;
      if (const CLI::Option* opt = option_of(*sub, a)) {
        if (a.find('=') == std::string::npos && opt->get_items_expected_max() > 0) ++i;  // its value
        continue;
      }
      const std::string typed = a.substr(0, a.find('='));
      return with_suggestion(
          name + ": unknown option '" + typed + "'; valid options: " + join_names(option_names(*sub)), typed,
          option_names(*sub));
    }
  }
  return name + ": " + std::string(error.what()) + " (spsim " + name + " --help)";
}

}  // namespace spsim::cli
