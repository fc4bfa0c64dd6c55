// Report tables: column alignment in text, Markdown escaping, RFC 4180 CSV quoting, number formats.
#include "analysis/report/table.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>

using spsim::analysis::Align;
using spsim::analysis::Table;

namespace {

// UTF-8 to code points, written independently of display_width so the test checks it.
std::u32string decode(const std::string& s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : c & (0x3F >> (len - 1));
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::vector<std::u32string> lines_of(const std::string& text) {
  std::vector<std::u32string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(decode(line));
  return lines;
}

bool blank(const std::u32string& s) {
  return s.find_first_not_of(U' ') == std::u32string::npos;
}

}  // namespace

TEST_CASE("text table: each column sits in the span of its rule, aligned as declared") {
  Table t(
      {{"strategy", Align::left}, {"time", Align::right}, {"bytes", Align::right}, {"note", Align::left}});
  t.add_row({"rsa", "12.50 µs", "1.50 KiB", "ok"});
  t.add_row({"reduce_scatter", "3.20 ms", "512 B", ""});
  t.add_row({"x", "1.05 s", "3.00 GiB", "a longer note"});
  const auto lines = lines_of(t.to_text());
  REQUIRE(lines.size() == 2 + t.rows().size());
  // Column spans come from the rule line: runs of dashes separated by two spaces.
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end)
  for (std::size_t i = 0; i < lines[1].size();) {
    const auto end = lines[1].find(U' ', i);
    spans.emplace_back(i, end == std::u32string::npos ? lines[1].size() : end);
    i = spans.back().second + 2;
  }
  REQUIRE(spans.size() == t.columns().size());
  for (std::size_t r = 0; r < lines.size(); ++r) {
    if (r == 1) continue;
    auto line = lines[r];
    line.resize(spans.back().second, U' ');  // trailing spaces are trimmed; pad back for slicing
    for (std::size_t c = 0; c < spans.size(); ++c) {
      CAPTURE(r);
      CAPTURE(c);
      const auto [b, e] = spans[c];
      const auto cell = r == 0 ? t.columns()[c].header : t.rows()[r - 2][c];
      const auto expected = decode(cell);
      const auto field = line.substr(b, e - b);
      if (c + 1 < spans.size()) CHECK(blank(line.substr(e, 2)));  // the separator
      if (expected.empty()) {
        CHECK(blank(field));
      } else if (t.columns()[c].align == Align::right) {
        CHECK(field.substr(field.size() - expected.size()) == expected);
        CHECK(blank(field.substr(0, field.size() - expected.size())));
      } else {
        CHECK(field.substr(0, expected.size()) == expected);
        CHECK(blank(field.substr(expected.size())));
      }
    }
  }
  // The widest cell sets the width: "reduce_scatter" (14) in column 0, "a longer note" (13) in column 3.
  CHECK(spans[0].second - spans[0].first == 14);
  CHECK(spans[3].second - spans[3].first == 13);
}

TEST_CASE("CSV quotes commas, quotes, line breaks and edge spaces (RFC 4180)") {
  Table t({{"name"}, {"value", Align::right}});
  t.add_row({"plain", "1"});
  t.add_row({"a,b", "say \"hi\""});
  t.add_row({"two\nlines", " padded"});
  t.add_row({"", "x"});
  CHECK(t.to_csv() ==
        "name,value\n"
        "plain,1\n"
        "\"a,b\",\"say \"\"hi\"\"\"\n"
        "\"two\nlines\",\" padded\"\n"
        ",x\n");
}

TEST_CASE("Markdown escapes pipes and marks right-aligned columns") {
  Table t({{"a|b"}, {"n", Align::right}});
  t.add_row({"x|y", "2"});
  CHECK(t.to_markdown() ==
        "| a\\|b | n |\n"
        "| --- | ---: |\n"
        "| x\\|y | 2 |\n");
}

TEST_CASE("a row of the wrong width is a programming error") {
  Table t({{"a"}, {"b"}});
  CHECK_THROWS_AS(t.add_row({"only one"}), std::invalid_argument);
  CHECK(t.rows().empty());
}

TEST_CASE("display width counts code points") {
  CHECK(spsim::analysis::display_width("abc") == 3);
  CHECK(spsim::analysis::display_width("12 \u00b5s") == 5);  // µ is two bytes, one column
}

TEST_CASE("number formatting") {
  using namespace spsim::analysis;
  CHECK(format_fixed(3.14159, 2) == "3.14");
  CHECK(format_fixed(2.0, 0) == "2");
  CHECK(format_scientific(12345.0, 2) == "1.23e+04");
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.50 KiB");  // 1536 / 1024
  CHECK(format_bytes(3.0 * 1024 * 1024) == "3.00 MiB");
  CHECK(format_bytes(1.25 * 1024 * 1024 * 1024) == "1.25 GiB");
  CHECK(format_bytes(2.0 * 1024 * 1024 * 1024 * 1024) == "2.00 TiB");
  CHECK(format_seconds(12.5e-6) == "12.50 \u00b5s");
  CHECK(format_seconds(0.0) == "0.00 \u00b5s");
  CHECK(format_seconds(3.2e-3) == "3.20 ms");
  CHECK(format_seconds(1.05) == "1.05 s");
  CHECK(format_seconds(120.0) == "120.00 s");
}
