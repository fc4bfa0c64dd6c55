// NumPy .npy writer (see npy.hpp).
#include "analysis/check/npy.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "runtime/core/error.hpp"

namespace spsim::analysis {

namespace {

constexpr std::size_t preamble_bytes = 10;  // magic (6) + version (2) + header length (2)
constexpr std::size_t alignment = 64;

std::string shape_tuple(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';  // Python's one-element tuple
  s += ')';
  return s;
}

template <class T>
void write_array(const std::filesystem::path& path, std::span<const T> data,
                 const std::vector<std::int64_t>& shape, const char* descr) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) throw std::invalid_argument("write_npy: negative dimension");
    n *= d;
  }
  if (static_cast<std::uint64_t>(n) != data.size())
    throw std::invalid_argument("write_npy: shape holds " + std::to_string(n) + " values, data has " +
                                std::to_string(data.size()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path.string(), "cannot open '" + path.string() + "' for writing");
  const std::string header = npy_header(descr, shape);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if constexpr (std::endian::native == std::endian::little) {
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size_bytes()));
  } else {
    for (const T& v : data) {  // .npy data here is declared little-endian ('<')
      char bytes[sizeof(T)];
      std::memcpy(bytes, &v, sizeof(T));
      std::reverse(bytes, bytes + sizeof(T));
      out.write(bytes, sizeof(T));
    }
  }
  if (!out) throw InputError(path.string(), "error while writing '" + path.string() + "'");
}

}  // namespace

std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape) {
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  const std::size_t unpadded = preamble_bytes + dict.size() + 1;  // + the closing '\n'
  dict.append((alignment - unpadded % alignment) % alignment, ' ');
  dict += '\n';
  const auto len = static_cast<std::uint16_t>(dict.size());
  const char magic[] = {'\x93',
                        'N',
                        'U',
                        'M',
                        'P',
                        'Y',
                        '\x01',
                        '\x00',  // magic, version 1.0
                        static_cast<char>(len & 0xFF),
                        static_cast<char>(len >> 8)};
  std::string out(magic, preamble_bytes);
  out.append(dict);
  return out;
}

void write_npy(const std::filesystem::path& path, std::span<const double> data,
               const std::vector<std::int64_t>& shape) {
  write_array(path, data, shape, "<f8");
}

void write_npy(const std::filesystem::path& path, std::span<const float> data,
               const std::vector<std::int64_t>& shape) {
  write_array(path, data, shape, "<f4");
}

}  // namespace spsim::analysis
