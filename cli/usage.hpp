// Usage errors of the command line: what was typed, the valid choices and the nearest one.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace spsim::cli {

// The choice closest to `typed` by edit distance, when it is close enough to be a likely typo
// (distance at most a third of the longer word, at least 1), else "".
[[nodiscard]] std::string nearest(const std::string& typed, const std::vector<std::string>& choices);

// One line (without the "spsim: error: " prefix) explaining why `args` (argv[1..]) did not parse:
// an unknown subcommand or option names what was typed, lists the valid ones and suggests the nearest;
// anything else is CLI11's message under the subcommand's name, with where to find --help.
[[nodiscard]] std::string usage_message(const CLI::App& app, const std::vector<std::string>& args,
                                        const CLI::ParseError& error);

}  // namespace spsim::cli
