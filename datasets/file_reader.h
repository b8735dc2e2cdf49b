// DYNAMIX — whole-file reads that accept gzip or raw bytes alike, with errors naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

bool file_exists(const std::string& path);

// Returns `path` if it exists, else `path + ".gz"` if that exists, else "".
std::string find_plain_or_gz(const std::string& path);

// Reads the whole (decompressed) content. Throws dynamix::Error for a missing or unreadable file
// or a damaged gzip stream.
std::vector<uint8_t> read_maybe_gz(const std::string& path);

}  // namespace dynamix
