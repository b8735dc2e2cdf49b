// DYNAMIX tests — small file writers for dataset tests (TempDir and error_of: tests/test_util.h).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace dynamix::testing {

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gz = false) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return;
  }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

inline void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

}  // namespace dynamix::testing
