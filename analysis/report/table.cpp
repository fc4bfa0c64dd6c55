// Report tables and number formatting (see table.hpp).
#include "analysis/report/table.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace spsim::analysis {

namespace {

std::string printf_double(const char* format, int digits, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, digits, value);
  return buf;
}

// A cell on one line: line breaks would break the column grid of text and Markdown tables.
std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string pad(const std::string& cell, std::size_t width, Align align) {
  const std::string fill(width - display_width(cell), ' ');
  return align == Align::right ? fill + cell : cell + fill;
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string markdown_cell(const std::string& cell) {
  std::string out;
  for (char c : one_line(cell)) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string csv_cell(const std::string& cell) {
  const bool quote = cell.find_first_of(",\"\r\n") != std::string::npos ||
                     (!cell.empty() && (cell.front() == ' ' || cell.back() == ' '));
  if (!quote) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::invalid_argument("Table::add_row: " + std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

std::size_t display_width(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++n;  // count every byte that is not a UTF-8 continuation byte
  return n;
}

std::string Table::to_text() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = display_width(columns_[c].header);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(one_line(row[c])));
  }
  auto line = [&](auto cell_of) {
    std::string s;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) s += "  ";
      s += pad(cell_of(c), width[c], columns_[c].align);
    }
    return rstrip(s) + "\n";
  };
  std::string out = line([&](std::size_t c) { return columns_[c].header; });
  out += line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows_) out += line([&](std::size_t c) { return one_line(row[c]); });
  return out;
}

std::string Table::to_markdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (const auto& cell : cells) {
      s += ' ';
      s += markdown_cell(cell);
      s += " |";
    }
    s += '\n';
    return s;
  };
  std::vector<std::string> headers, rule;
  for (const auto& col : columns_) {
    headers.push_back(col.header);
    rule.emplace_back(col.align == Align::right ? "---:" : "---");
  }
  std::string out = line(headers) + line(rule);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string Table::to_csv() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) s += ',';
      s += csv_cell(cells[i]);
    }
    s += '\n';
    return s;
  };
  std::vector<std::string> headers;
  for (const auto& col : columns_) headers.push_back(col.header);
  std::string out = line(headers);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string format_fixed(double value, int digits) {
  return printf_double("%.*f", digits, value);
}

std::string format_scientific(double value, int digits) {
  return printf_double("%.*e", digits, value);
}

std::string format_bytes(double bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (!std::isfinite(bytes)) return format_fixed(bytes, 0) + " B";
  if (std::fabs(bytes) < 1024.0) return format_fixed(bytes, 0) + " B";
  double v = bytes / 1024.0;
  std::size_t u = 0;
  while (std::fabs(v) >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  return format_fixed(v, 2) + " " + units[u];
}

std::string format_seconds(double seconds) {
  const double mag = std::fabs(seconds);
  if (!std::isfinite(seconds)) return format_fixed(seconds, 2) + " s";
  if (mag < 1e-3) return format_fixed(seconds * 1e6, 2) + " \u00b5s";
  if (mag < 1.0) return format_fixed(seconds * 1e3, 2) + " ms";
  return format_fixed(seconds, 2) + " s";
}

std::string options_text(const std::map<std::string, std::string>& options) {
  std::string s;
  for (const auto& [k, v] : options) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s;
}

}  // namespace spsim::analysis
