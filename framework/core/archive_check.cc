// DYNAMIX — zip checksum walk (APPNOTE.TXT: end of central directory, zip64 records, central and
// local file headers).
#include "framework/core/archive_check.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndRecord = 0x06054b50,
                   kZip64EndRecord = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr size_t kEndRecordSize = 22, kCentralSize = 46, kLocalSize = 30;
constexpr uint64_t kMax32 = 0xFFFFFFFF;

// Little-endian reads that refuse to leave the archive.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}
  uint64_t le(uint64_t at, int size) const {
    need(at, static_cast<uint64_t>(size), "a header");
    uint64_t v = 0;
    for (int i = 0; i < size; ++i)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[at + i])) << (8 * i);
    return v;
  }
  void need(uint64_t at, uint64_t size, const std::string& part) const {
    if (at > bytes_.size() || size > bytes_.size() - at) fail(part + " lies beyond the end of the file");
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(what_ + ": not an intact archive: " + problem);
  }
  std::string_view bytes() const { return bytes_; }

 private:
  std::string_view bytes_;
  const std::string& what_;
};

struct Directory {
  uint64_t entries = 0, offset = 0;
};

// The end of central directory record (searched back over its comment), and the zip64 one where
// the 32-bit fields overflowed.
Directory find_directory(const Reader& r) {
  const std::string_view b = r.bytes();
  if (b.size() < kEndRecordSize) r.fail("too short for a zip file (" + std::to_string(b.size()) + " bytes)");
  const size_t lowest = b.size() - std::min(b.size(), kEndRecordSize + 0xFFFF);
  for (size_t at = b.size() - kEndRecordSize + 1; at-- > lowest;) {
    if (r.le(at, 4) != kEndRecord) continue;
    Directory d{r.le(at + 10, 2), r.le(at + 16, 4)};
    if (d.entries == 0xFFFF || d.offset == kMax32) {
      if (at < 20 || r.le(at - 20, 4) != kZip64Locator) r.fail("zip64 end record locator missing");
      const uint64_t end64 = r.le(at - 20 + 8, 8);
      if (r.le(end64, 4) != kZip64EndRecord) r.fail("zip64 end record missing");
      d = Directory{r.le(end64 + 32, 8), r.le(end64 + 48, 8)};
    }
    return d;
  }
  r.fail("no end of central directory record (not a zip file, or truncated)");
}

struct Entry {
  std::string name;
  uint64_t method = 0, crc = 0, size = 0, stored_size = 0, local_offset = 0;
  uint64_t header_size = 0;  // of this central directory header
};

// One central directory header at `at`; 32-bit fields set to 0xFFFFFFFF take their value from the
// zip64 extra field, in its order (size, stored size, offset).
Entry read_entry(const Reader& r, uint64_t at) {
  if (r.le(at, 4) != kCentralHeader) r.fail("central directory header " + std::to_string(at) + " is not one");
  Entry e;
  e.method = r.le(at + 10, 2);
  e.crc = r.le(at + 16, 4);
  e.stored_size = r.le(at + 20, 4);
  e.size = r.le(at + 24, 4);
  const uint64_t name_len = r.le(at + 28, 2), extra_len = r.le(at + 30, 2), comment_len = r.le(at + 32, 2);
  e.local_offset = r.le(at + 42, 4);
  r.need(at + kCentralSize, name_len + extra_len, "an entry name");
  e.name = std::string(r.bytes().substr(at + kCentralSize, name_len));
  e.header_size = kCentralSize + name_len + extra_len + comment_len;
  for (uint64_t x = at + kCentralSize + name_len, end = x + extra_len; x + 4 <= end;) {
    const uint64_t id = r.le(x, 2), len = r.le(x + 2, 2);
    if (id == 0x0001) {
      uint64_t field = x + 4;
      for (uint64_t* v : {&e.size, &e.stored_size, &e.local_offset}) {
        if (*v != kMax32) continue;
        if (field + 8 > x + 4 + len) r.fail("'" + e.name + "': zip64 field too short");
        *v = r.le(field, 8);
        field += 8;
      }
    }
    x += 4 + len;
  }
  return e;
}

// CRC-32 of what a raw deflate stream inflates to, inflated a chunk at a time (nothing the size
// field claims is allocated); fails unless it inflates to exactly `size` bytes.
uint32_t inflated_crc(const Reader& r, std::string_view deflated, uint64_t size, const std::string& name) {
  if (deflated.size() > std::numeric_limits<uInt>::max()) r.fail(name + " is too large");
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) r.fail("zlib cannot start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflated.data()));
  z.avail_in = static_cast<uInt>(deflated.size());
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t total = 0;
  int status = Z_OK;
  Bytef chunk[1 << 15];
  while (status == Z_OK) {
    z.next_out = chunk;
    z.avail_out = sizeof(chunk);
    status = inflate(&z, Z_NO_FLUSH);
    const uInt produced = static_cast<uInt>(sizeof(chunk) - z.avail_out);
    crc = crc32(crc, chunk, produced);
    total += produced;
    if (status == Z_OK && produced == 0) status = Z_DATA_ERROR;  // input ended mid-stream
    if (total > size) status = Z_DATA_ERROR;                     // longer than it says
  }
  inflateEnd(&z);
  if (status != Z_STREAM_END || total != size)
    r.fail(name + " does not inflate to its " + std::to_string(size) + " bytes");
  return static_cast<uint32_t>(crc);
}

// The entry's data, found through its local header, against its CRC-32.
void check_entry(const Reader& r, const Entry& e) {
  const std::string name = "'" + e.name + "'";
  if (r.le(e.local_offset, 4) != kLocalHeader) r.fail(name + ": no local header at its offset");
  const uint64_t data =
      e.local_offset + kLocalSize + r.le(e.local_offset + 26, 2) + r.le(e.local_offset + 28, 2);
  r.need(data, e.stored_size, name + "'s data");
  const std::string_view stored = r.bytes().substr(data, e.stored_size);
  uint32_t crc = 0;
  if (e.method == 0 && e.size == e.stored_size)
    crc = crc32_of(stored);
  else if (e.method == 8)
    crc = inflated_crc(r, stored, e.size, name);
  else
    r.fail(name + " has compression method " + std::to_string(e.method) + " and " +
           std::to_string(e.stored_size) + " of " + std::to_string(e.size) +
           " bytes stored; LibTorch writes methods 0 and 8");
  if (crc != e.crc) r.fail(name + ": checksum mismatch");
}

}  // namespace

uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes.size();) {  // zlib takes uInt lengths
    const auto n = static_cast<uInt>(std::min<size_t>(bytes.size() - done, size_t{1} << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), n);
    done += n;
  }
  return static_cast<uint32_t>(crc);
}

void check_zip_archive(std::string_view bytes, const std::string& what) {
  const Reader r(bytes, what);
  const Directory d = find_directory(r);
  uint64_t at = d.offset;
  for (uint64_t k = 0; k < d.entries; ++k) {
    const Entry e = read_entry(r, at);
    check_entry(r, e);
    at += e.header_size;
  }
}

}  // namespace dynamix
