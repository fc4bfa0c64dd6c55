// .npy writer: the header follows NumPy's format 1.0 spec, the data follows it byte for byte, and NumPy
// itself reads the file back (when /usr/bin/python3 has numpy).
#include "analysis/check/npy.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "tests/support/helpers.hpp"

using spsim::analysis::npy_header;
using spsim::analysis::write_npy;

namespace {

struct ParsedHeader {
  int major = 0, minor = 0;
  std::string dict;
  std::size_t total = 0;  // bytes before the data
};

// Per numpy.lib.format: "\x93NUMPY", major, minor, uint16 little-endian header length, ASCII dict.
ParsedHeader parse_header(const std::string& bytes) {
  REQUIRE(bytes.size() >= 10);
  CHECK(bytes.substr(0, 6) == std::string("\x93NUMPY"));
  ParsedHeader h;
  h.major = static_cast<unsigned char>(bytes[6]);
  h.minor = static_cast<unsigned char>(bytes[7]);
  const std::size_t len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  REQUIRE(bytes.size() >= 10 + len);
  h.dict = bytes.substr(10, len);
  h.total = 10 + len;
  return h;
}

// The integers of the dict's 'shape' tuple.
std::vector<std::int64_t> shape_of(const std::string& dict) {
  const std::string key = "'shape': (";
  const auto begin = dict.find(key);
  REQUIRE(begin != std::string::npos);
  const auto end = dict.find(')', begin);
  std::vector<std::int64_t> shape;
  std::string inside = dict.substr(begin + key.size(), end - begin - key.size());
  for (std::size_t i = 0; i < inside.size();) {
    if (inside[i] >= '0' && inside[i] <= '9') {
      std::size_t used = 0;
      shape.push_back(std::stoll(inside.substr(i), &used));
      i += used;
    } else {
      ++i;
    }
  }
  return shape;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("npy header: magic, version 1.0, dict, padded to 64 bytes") {
  const std::vector<std::vector<std::int64_t>> shapes = {{},           {5},    {2, 3},
                                                         {2, 3, 4, 5}, {0, 7}, {123456789, 2}};
  const std::vector<std::string> tuples = {"()",           "(5,)",   "(2, 3)",
                                           "(2, 3, 4, 5)", "(0, 7)", "(123456789, 2)"};
  for (const std::string descr : {"<f8", "<f4"}) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      CAPTURE(descr);
      CAPTURE(tuples[i]);
      const auto bytes = npy_header(descr, shapes[i]);
      const auto h = parse_header(bytes);
      CHECK(h.major == 1);
      CHECK(h.minor == 0);
      CHECK(h.total == bytes.size());
      CHECK(h.total % 64 == 0);
      CHECK(h.dict.front() == '{');
      CHECK(h.dict.back() == '\n');
      CHECK(h.dict.find("'descr': '" + descr + "'") != std::string::npos);
      CHECK(h.dict.find("'fortran_order': False") != std::string::npos);
      CHECK(h.dict.find("'shape': " + tuples[i]) != std::string::npos);
      CHECK(shape_of(h.dict) == shapes[i]);
      // Between the closing brace and the newline only spaces (the padding).
      const auto close = h.dict.rfind('}');
      CHECK(h.dict.find_first_not_of(' ', close + 1) == h.dict.size() - 1);
    }
  }
}

TEST_CASE("write_npy: header then the values, C order, little-endian") {
  spsim::test::TempDir dir;
  const std::vector<double> d = {1.0, -2.5, 3.25, 0.0, 1e-300, 6.0};
  write_npy(dir.path() / "d.npy", std::span<const double>(d), {2, 3});
  const auto bytes = read_all(dir.path() / "d.npy");
  const auto h = parse_header(bytes);
  REQUIRE(bytes.size() == h.total + d.size() * sizeof(double));
  for (std::size_t i = 0; i < d.size(); ++i) {
    // Assemble each value from its 8 little-endian bytes.
    std::uint64_t bits = 0;
    for (int b = 7; b >= 0; --b) bits = (bits << 8) | static_cast<unsigned char>(bytes[h.total + i * 8 + b]);
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    CHECK(v == d[i]);
  }

  const std::vector<float> f = {0.5f, -1.0f, 3.0f};
  write_npy(dir.path() / "f.npy", std::span<const float>(f), {3});
  const auto fbytes = read_all(dir.path() / "f.npy");
  const auto fh = parse_header(fbytes);
  CHECK(fh.dict.find("'<f4'") != std::string::npos);
  CHECK(fbytes.size() == fh.total + f.size() * sizeof(float));
}

TEST_CASE("write_npy: shape mismatch and unwritable path") {
  spsim::test::TempDir dir;
  const std::vector<double> d = {1, 2, 3};
  CHECK_THROWS_AS(write_npy(dir.path() / "x.npy", std::span<const double>(d), {2, 2}), std::invalid_argument);
  const auto err = spsim::test::input_error_of(
      [&] { write_npy(dir.path() / "no" / "such" / "dir.npy", std::span<const double>(d), {3}); });
  REQUIRE(err.has_value());
  CHECK(spsim::test::contains(err->where(), "dir.npy"));
}

TEST_CASE("NumPy reads the files back") {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: /usr/bin/python3 cannot import numpy");
    return;
  }
  spsim::test::TempDir dir;
  // Multiples of 0.25 print exactly, so Python can compare with ==.
  std::vector<double> d(24);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 0.25 * static_cast<double>(i) - 2.0;
  write_npy(dir.path() / "d.npy", std::span<const double>(d), {2, 3, 4});
  const std::vector<float> f = {1.5f, -0.25f, 8.0f};
  write_npy(dir.path() / "f.npy", std::span<const float>(f), {3});
  const std::vector<double> empty;
  write_npy(dir.path() / "e.npy", std::span<const double>(empty), {0, 5});

  // Element [i, j, k] of a C-order [2, 3, 4] array is flat index 12 i + 4 j + k.
  const std::string script =
      "import numpy as np, sys\n"
      "p = sys.argv[1]\n"
      "d = np.load(p + '/d.npy')\n"
      "assert d.dtype == np.float64 and d.shape == (2, 3, 4), (d.dtype, d.shape)\n"
      "for i in range(2):\n"
      "  for j in range(3):\n"
      "    for k in range(4):\n"
      "      assert d[i, j, k] == 0.25 * (12 * i + 4 * j + k) - 2.0\n"
      "f = np.load(p + '/f.npy')\n"
      "assert f.dtype == np.float32 and f.tolist() == [1.5, -0.25, 8.0], f\n"
      "e = np.load(p + '/e.npy')\n"
      "assert e.shape == (0, 5)\n";
  spsim::test::write_file(dir.path() / "check.py", script);
  const std::string cmd =
      "/usr/bin/python3 '" + (dir.path() / "check.py").string() + "' '" + dir.path().string() + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}
