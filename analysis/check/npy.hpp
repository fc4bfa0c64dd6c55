// NumPy .npy writer (format version 1.0), so `check --dump` output loads with numpy.load / torch.
//
// Layout (numpy.lib.format): the magic "\x93NUMPY", version bytes 1 0, a little-endian uint16 header
// length, then an ASCII dict "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }" padded with
// spaces and ending in '\n' so that magic + version + length + dict is a multiple of 64 bytes; then the
// data, C order, little-endian.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace spsim::analysis {

// The preamble (magic through padded dict) for a '<f8' or '<f4' array of `shape`.
[[nodiscard]] std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape);

// Writes `data` (C order, numel(shape) values) as `path`. A shape that does not match data.size() is a
// programming error (std::invalid_argument); a file that cannot be written is an InputError at the path.
void write_npy(const std::filesystem::path& path, std::span<const double> data,
               const std::vector<std::int64_t>& shape);
void write_npy(const std::filesystem::path& path, std::span<const float> data,
               const std::vector<std::int64_t>& shape);

}  // namespace spsim::analysis
