// Sequence layouts (see layouts.hpp).
#include "strategies/layouts.hpp"

#include "strategies/strategy.hpp"

namespace spsim::strategies {

Layout parse_layout(const std::string& name) {
  if (name == "zigzag") return Layout::zigzag;
  if (name == "striped") return Layout::striped;
  return Layout::contiguous;
}

std::vector<std::int64_t> zigzag_positions(int rank, int degree, std::int64_t seq_len) {
  const std::int64_t half = seq_len / (2 * degree);
  std::vector<std::int64_t> pos;
  pos.reserve(static_cast<std::size_t>(2 * half));
  for (const std::int64_t chunk : {std::int64_t{rank}, std::int64_t{2 * degree - 1 - rank}})
    for (std::int64_t i = 0; i < half; ++i) pos.push_back(chunk * half + i);
  return pos;
}

std::vector<std::int64_t> striped_positions(int rank, int degree, std::int64_t seq_len) {
  std::vector<std::int64_t> pos;
  pos.reserve(static_cast<std::size_t>(seq_len / degree));
  for (std::int64_t t = rank; t < seq_len; t += degree) pos.push_back(t);
  return pos;
}

std::vector<std::int64_t> layout_positions(Layout layout, int rank, int degree, std::int64_t seq_len) {
  switch (layout) {
    case Layout::zigzag:
      return zigzag_positions(rank, degree, seq_len);
    case Layout::striped:
      return striped_positions(rank, degree, seq_len);
    case Layout::contiguous:
      break;
  }
  return contiguous_positions(rank, degree, seq_len);
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
