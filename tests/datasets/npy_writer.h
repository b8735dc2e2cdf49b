// DYNAMIX tests — .npy files written byte by byte as NumPy lays them out (for the reader's tests and
// the fuzz seeds), so that broken variants are easy to make.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dynamix::testing {

inline std::string npy_header_dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

// Magic, version, header length, the header dict padded with spaces and ended by '\n' so that the
// data start at a multiple of `align` (NumPy: 64), then the data.
inline std::vector<uint8_t> npy_bytes(const std::string& dict, const std::vector<uint8_t>& data,
                                      int version = 1, size_t align = 64) {
  const size_t preamble = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % align != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The bytes of `values` (little-endian on the machines we run on).
template <typename T>
std::vector<uint8_t> npy_data(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace dynamix::testing
