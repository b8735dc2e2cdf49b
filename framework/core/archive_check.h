// DYNAMIX — integrity of LibTorch archives held in memory. LibTorch's zip reader skips the CRC-32
// every entry carries, and its TorchScript reader trusts the module source inside: a damaged
// policy file could crash it (SEGV in ScriptTypeParser, found by tests/fuzz/fuzz_policy.cc)
// instead of being refused. Checking the checksums first turns any damage into an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamix {

// CRC-32 (zlib's) of `bytes`.
uint32_t crc32_of(std::string_view bytes);

// Walks a zip archive's central directory (zip64 records included) and checks that every entry lies
// inside `bytes` and matches its CRC-32, stored or deflated (the two methods LibTorch writes).
// Throws dynamix::Error "WHAT: not an intact archive: ..." naming the entry and the problem.
void check_zip_archive(std::string_view bytes, const std::string& what);

}  // namespace dynamix
