// DYNAMIX — checkpoint container: magic, format version, CRC32 and length around an opaque
// payload, written atomically (temp file in the same directory, fsync, rename, fsync dir), so a
// crash mid-write never replaces a good checkpoint and a truncated or foreign file is named.
#pragma once

#include <cstdint>
#include <string>

namespace dynamix {

constexpr uint32_t kCheckpointVersion = 1;

// Writes `payload` to `path` atomically. Throws dynamix::Error naming the path on failure.
void write_checkpoint_file(const std::string& path, const std::string& payload);
// Reads and validates a container; returns the payload. Errors name the path and the problem
// (missing, not a DYNAMIX checkpoint, unsupported version, truncated, checksum mismatch).
std::string read_checkpoint_file(const std::string& path);

}  // namespace dynamix
