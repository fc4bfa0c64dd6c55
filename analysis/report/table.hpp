// Report tables: columns with alignment and rows of preformatted cells, rendered as aligned text,
// Markdown or CSV; plus the number formatting the tables use (fixed, scientific, bytes, times).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spsim::analysis {

enum class Align : std::uint8_t { left, right };

struct Column {
  std::string header;
  Align align = Align::left;  // numbers read best right-aligned
};

class Table {
 public:
  explicit Table(std::vector<Column> columns);

  // Cells are already formatted. A row with the wrong number of cells is a programming error
  // (std::invalid_argument).
  void add_row(std::vector<std::string> cells);

  [[nodiscard]] const std::vector<Column>& columns() const { return columns_; }
  [[nodiscard]] const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  // Header, a rule of dashes, then the rows; columns padded to their widest cell (counted in UTF-8
  // code points, so "µs" is two wide) and separated by two spaces. Every line ends in '\n'.
  [[nodiscard]] std::string to_text() const;
  // GitHub-flavoured Markdown; '|' in a cell is escaped, right-aligned columns use "---:".
  [[nodiscard]] std::string to_markdown() const;
  // RFC 4180 quoting: a cell with a comma, a double quote, a line break or edge spaces is wrapped in
  // double quotes with inner quotes doubled. Lines end in '\n'.
  [[nodiscard]] std::string to_csv() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Display width of a UTF-8 string: its code points (no wide East Asian characters in our tables).
[[nodiscard]] std::size_t display_width(const std::string& text);

// "%.{digits}f" and "%.{digits}e".
[[nodiscard]] std::string format_fixed(double value, int digits);
[[nodiscard]] std::string format_scientific(double value, int digits);
// Binary units: "512 B", "1.50 KiB", "3.00 MiB", "1.25 GiB", "2.00 TiB" (1 KiB = 1024 B).
[[nodiscard]] std::string format_bytes(double bytes);
// Strategy options as "key=value, key=value" (keys in order).
[[nodiscard]] std::string options_text(const std::map<std::string, std::string>& options);
// "850.00 ns" below 1 µs, then "12.50 µs", "3.20 ms", "1.05 s"; the unit is chosen before rounding.
[[nodiscard]] std::string format_seconds(double seconds);

}  // namespace spsim::analysis
