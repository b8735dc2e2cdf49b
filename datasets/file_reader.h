// DYNAMIX — whole-file reads that accept gzip or raw bytes alike, and read-only memory maps; errors
// name the file.
#pragma once

#include <cstddef>
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

// A whole file mapped read-only (MAP_PRIVATE); unmapped when the last owner lets go.
class MappedFile {
 public:
  // Throws dynamix::Error for a missing, unreadable or unmappable file.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }  // nullptr for an empty file
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dynamix
