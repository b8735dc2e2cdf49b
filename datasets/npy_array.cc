// DYNAMIX — .npy parsing: a fixed preamble, then a Python dict literal with three keys, then raw data.
#include "datasets/npy_array.h"

#include <cctype>
#include <cstring>
#include <memory>

#include "datasets/file_reader.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int64_t kMaxDim = int64_t{1} << 48;  // far beyond any file; keeps products from overflowing early

// NumPy type code (kind + item size) to the tensor type; little-endian or single-byte only.
struct DtypeEntry {
  const char* code;
  torch::ScalarType type;
};
constexpr DtypeEntry kDtypes[] = {
    {"f2", torch::kFloat16}, {"f4", torch::kFloat32}, {"f8", torch::kFloat64},
    {"u1", torch::kUInt8},   {"i1", torch::kInt8},    {"i2", torch::kInt16},
    {"i4", torch::kInt32},   {"i8", torch::kInt64},   {"b1", torch::kBool},
};

torch::ScalarType dtype_of(const std::string& descr, const std::string& path) {
  const std::string supported = " (supported: float16/32/64, uint8, int8/16/32/64, bool)";
  if (descr.size() < 3 || std::strchr("<>|=", descr[0]) == nullptr) {
    throw Error(path + ": unsupported .npy dtype '" + descr + "'" + supported);
  }
  const std::string code = descr.substr(1);
  for (const DtypeEntry& e : kDtypes) {
    if (code != e.code) continue;
    if (descr[0] == '>' && torch::elementSize(e.type) > 1) {
      throw Error(path + ": big-endian dtype '" + descr + "' is not supported; save it little-endian, e.g. " +
                  "np.save(path, a.astype(a.dtype.newbyteorder('<')))");
    }
    return e.type;
  }
  throw Error(path + ": unsupported .npy dtype '" + descr + "'" + supported);
}

// Reads the header dictionary, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class HeaderParser {
 public:
  HeaderParser(std::string text, std::string path) : s_(std::move(text)), path_(std::move(path)) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        if (peek('[')) fail("structured dtypes (a list in 'descr') are not supported");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!have_descr || !have_fortran || !have_shape) {
      fail("the header needs the keys 'descr', 'fortran_order' and 'shape'");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_ + ": bad .npy header: " + what + " (header: " + s_.substr(0, 200) + ")");
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a quoted string");
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      if (s_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }
  int64_t integer() {
    skip_space();
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      fail("expected a non-negative integer in 'shape'");
    }
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + (s_[pos_++] - '0');
      if (v > kMaxDim) fail("a dimension in 'shape' is too large");
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literals
    return v;
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peek(')')) {
      dims.push_back(integer());
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  std::string s_, path_;
  size_t pos_ = 0;
};

uint32_t read_le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string npy_shape_text(c10::IntArrayRef shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader parse_npy_header(const uint8_t* data, size_t size, const std::string& path) {
  if (size < kMagicLen || std::memcmp(data, kMagic, kMagicLen) != 0) {
    throw Error(path + ": not a .npy file (bad magic; expected \\x93NUMPY)");
  }
  if (size < kMagicLen + 2)
    throw Error(path + ": truncated .npy header (" + std::to_string(size) + " bytes)");
  const int major = data[6], minor = data[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw Error(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const size_t preamble = kMagicLen + 2 + len_bytes;
  if (size < preamble) throw Error(path + ": truncated .npy header (" + std::to_string(size) + " bytes)");
  const size_t header_len = read_le(data + kMagicLen + 2, len_bytes);
  if (size - preamble < header_len) {
    throw Error(path + ": truncated .npy header: it declares " + std::to_string(header_len) +
                " bytes, the file has " + std::to_string(size - preamble) + " after the preamble");
  }
  NpyHeader h;
  bool fortran = false;
  HeaderParser(std::string(reinterpret_cast<const char*>(data) + preamble, header_len), path)
      .parse(h.descr, fortran, h.shape);
  h.dtype = dtype_of(h.descr, path);
  if (fortran) {
    throw Error(path +
                ": fortran_order is True; save a C-order array (np.save(path, np.ascontiguousarray(a)))");
  }
  h.data_offset = preamble + header_len;
  const size_t item = torch::elementSize(h.dtype);
  if (h.data_offset % item != 0) {
    throw Error(path + ": array data starts at byte " + std::to_string(h.data_offset) +
                ", not aligned to its " + std::to_string(item) + "-byte items");
  }
  uint64_t bytes = item;
  for (int64_t d : h.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      throw Error(path + ": shape " + npy_shape_text(h.shape) + " is too large");
    }
  }
  const size_t available = size - h.data_offset;
  if (bytes != available) {
    throw Error(path + (bytes > available ? ": truncated file" : ": trailing bytes") + ": shape " +
                npy_shape_text(h.shape) + " of '" + h.descr + "' needs " + std::to_string(bytes) +
                " data bytes, the file has " + std::to_string(available));
  }
  h.data_bytes = static_cast<size_t>(bytes);
  return h;
}

NpyArray load_npy(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  const NpyHeader h = parse_npy_header(file->data(), file->size(), path);
  void* start = const_cast<uint8_t*>(file->data() + h.data_offset);
  torch::Tensor t = torch::from_blob(
      start, h.shape, [file](void*) mutable { file.reset(); }, torch::TensorOptions().dtype(h.dtype));
  return {path, h.descr, t};
}

}  // namespace dynamix
