// Sequence layouts (see layouts.hpp).
#include "strategies/layouts.hpp"

#include <array>

#include "strategies/strategy.hpp"

namespace spsim::strategies {

Layout parse_layout(const std::string& name) {
  if (name == "zigzag") return Layout::zigzag;
  if (name == "striped") return Layout::striped;
  return Layout::contiguous;
}

rt::Positions layout_runs(Layout layout, int rank, int degree, std::int64_t seq_len) {
  switch (layout) {
    case Layout::zigzag: {
      const std::int64_t half = seq_len / (2 * degree);
      const std::array<rt::Positions::Run, 2> chunks{
          rt::Positions::Run{rank * half, 1, half},
          rt::Positions::Run{(2 * degree - 1 - rank) * half, 1, half}};
      return rt::Positions::of_runs(chunks);
    }
    case Layout::striped: {
      const std::array<rt::Positions::Run, 1> run{
          rt::Positions::Run{rank, degree, rank < seq_len ? (seq_len - rank + degree - 1) / degree : 0}};
      return rt::Positions::of_runs(run);
    }
    case Layout::contiguous:
      break;
  }
  const std::int64_t chunk = seq_len / degree;
  return rt::Positions::range(rank * chunk, chunk);
}

std::vector<std::int64_t> layout_positions(Layout layout, int rank, int degree, std::int64_t seq_len) {
  return layout_runs(layout, rank, degree, seq_len).expand();
}

std::optional<std::string> layout_check(Layout layout, int degree, std::int64_t seq_len) {
  const std::string s = std::to_string(seq_len), p = std::to_string(degree);
  if (layout == Layout::zigzag) {
    if (seq_len % (2 * degree) != 0)
      return "seq_len " + s + " is not divisible by 2 x degree = " + std::to_string(2 * degree) +
             ": the zigzag layout cuts the sequence into 2P equal chunks (rank r holds chunks r and 2P-1-r)";
    return std::nullopt;
  }
  if (seq_len % degree != 0)
    return "seq_len " + s + " is not divisible by the degree " + p + ": the " +
           (layout == Layout::striped ? "striped layout deals tokens round-robin (token t on rank t mod P)"
                                      : "contiguous layout gives every rank s/P consecutive tokens") +
           " and every rank must hold the same number of tokens";
  return std::nullopt;
}

}  // namespace spsim::strategies
