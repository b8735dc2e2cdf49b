// DYNAMIX — check_zip_archive: LibTorch archives pass; damage anywhere in an entry, truncation and
// foreign files are refused naming the problem; zip64 records are followed.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "framework/core/archive_check.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

std::string torch_archive() {
  torch::serialize::OutputArchive a;
  a.write("weights", torch::arange(64, torch::kFloat));
  a.write("note", c10::IValue(std::string("a policy")));
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

std::string error_of(const std::string& bytes) {
  try {
    check_zip_archive(bytes, "test.pt");
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A one-entry zip written by hand: its central header gives sizes and offset as 0xFFFFFFFF and
// the real values in a zip64 extra field. `method` 0: stored; 8: `data` is raw deflate of `size`
// bytes; others are not written by LibTorch.
std::string zip64_entry_archive(const std::string& data, uint32_t crc, int method = 0, uint64_t size = 0) {
  if (method == 0) size = data.size();
  const std::string name = "archive/data.pkl";
  std::string z;
  put_le(z, 0x04034b50, 4);
  put_le(z, 45, 2), put_le(z, 0, 2), put_le(z, method, 2), put_le(z, 0, 4);  // version, flags, method, time
  put_le(z, crc, 4), put_le(z, data.size(), 4), put_le(z, size, 4);
  put_le(z, name.size(), 2), put_le(z, 0, 2);
  z += name + data;
  const size_t central = z.size();
  put_le(z, 0x02014b50, 4);
  put_le(z, 45, 2), put_le(z, 45, 2), put_le(z, 0, 2), put_le(z, method, 2), put_le(z, 0, 4);
  put_le(z, crc, 4), put_le(z, 0xFFFFFFFF, 4), put_le(z, 0xFFFFFFFF, 4);
  put_le(z, name.size(), 2), put_le(z, 4 + 24, 2), put_le(z, 0, 2);  // name, extra, comment lengths
  put_le(z, 0, 2), put_le(z, 0, 2), put_le(z, 0, 4), put_le(z, 0xFFFFFFFF, 4);
  z += name;
  put_le(z, 0x0001, 2), put_le(z, 24, 2), put_le(z, size, 8), put_le(z, data.size(), 8), put_le(z, 0, 8);
  const size_t central_size = z.size() - central;
  put_le(z, 0x06054b50, 4);
  put_le(z, 0, 2), put_le(z, 0, 2), put_le(z, 1, 2), put_le(z, 1, 2);
  put_le(z, central_size, 4), put_le(z, central, 4), put_le(z, 0, 2);
  return z;
}

TEST(ArchiveCheck, LibTorchArchivesPass) { EXPECT_EQ(error_of(torch_archive()), "<no error>"); }

TEST(ArchiveCheck, DamageInAnEntryIsACheckumMismatchNamingIt) {
  std::string bytes = torch_archive();
  const size_t at = bytes.find("a policy");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = 'A';
  const std::string e = error_of(bytes);
  EXPECT_NE(e.find("test.pt: not an intact archive: '"), std::string::npos) << e;
  EXPECT_NE(e.find("': checksum mismatch"), std::string::npos) << e;
}

TEST(ArchiveCheck, TruncatedAndForeignFilesAreRefused) {
  const std::string bytes = torch_archive();
  EXPECT_NE(error_of(bytes.substr(0, bytes.size() - 10)).find("no end of central directory record"),
            std::string::npos);
  EXPECT_NE(error_of(bytes.substr(0, bytes.size() / 2)).find("no end of central directory record"),
            std::string::npos);
  EXPECT_NE(error_of("not a zip").find("too short for a zip file (9 bytes)"), std::string::npos);
  std::string moved = bytes;  // central directory said to start past the end
  const size_t end = moved.rfind(std::string("PK\x05\x06", 4));
  ASSERT_NE(end, std::string::npos);
  moved[end + 19] = '\x7f';
  EXPECT_NE(error_of(moved).find("lies beyond the end of the file"), std::string::npos) << error_of(moved);
}

// LibTorch also writes zip64 end records; where the 32-bit fields say so, they are followed.
TEST(ArchiveCheck, Zip64RecordsAreFollowed) {
  std::string bytes = torch_archive();
  const size_t end = bytes.rfind(std::string("PK\x05\x06", 4));
  ASSERT_NE(end, std::string::npos);
  ASSERT_NE(bytes.rfind(std::string("PK\x06\x06", 4)), std::string::npos) << "LibTorch wrote no zip64 record";
  for (int i = 8; i < 12; ++i) bytes[end + i] = '\xff';   // entry counts 0xFFFF
  for (int i = 16; i < 20; ++i) bytes[end + i] = '\xff';  // directory offset 0xFFFFFFFF
  EXPECT_EQ(error_of(bytes), "<no error>");

  const std::string data = "hello, policy";
  const uint32_t crc = crc32_of(data);
  EXPECT_EQ(error_of(zip64_entry_archive(data, crc)), "<no error>");
  EXPECT_NE(error_of(zip64_entry_archive(data, crc ^ 1)).find("'archive/data.pkl': checksum mismatch"),
            std::string::npos);
  EXPECT_NE(error_of(zip64_entry_archive(data, crc, 12)).find("'archive/data.pkl' has compression method 12"),
            std::string::npos);
}

// Deflated entries (LibTorch deflates some of its code files) are inflated a chunk at a time and
// checked; a stream that inflates to another size, or not at all, is refused.
TEST(ArchiveCheck, DeflatedEntriesAreInflatedAndChecked) {
  const std::string data(100000, 'x');
  std::string deflated(compressBound(data.size()), '\0');
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(deflated.data());
  z.avail_out = static_cast<uInt>(deflated.size());
  ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  deflated.resize(z.total_out);
  deflateEnd(&z);
  const uint32_t crc = crc32_of(data);
  EXPECT_EQ(error_of(zip64_entry_archive(deflated, crc, 8, data.size())), "<no error>");
  EXPECT_NE(error_of(zip64_entry_archive(deflated, crc ^ 1, 8, data.size())).find("checksum mismatch"),
            std::string::npos);
  EXPECT_NE(error_of(zip64_entry_archive(deflated, crc, 8, uint64_t{1} << 40))
                .find("'archive/data.pkl' does not inflate to its 1099511627776 bytes"),
            std::string::npos);
  EXPECT_NE(error_of(zip64_entry_archive(deflated.substr(0, deflated.size() / 2), crc, 8, data.size()))
                .find("does not inflate"),
            std::string::npos);
  EXPECT_NE(error_of(zip64_entry_archive("not deflate", crc, 8, data.size())).find("does not inflate"),
            std::string::npos);
}

}  // namespace
}  // namespace dynamix
