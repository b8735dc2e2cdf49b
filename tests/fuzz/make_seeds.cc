// DYNAMIX fuzz seeds — writes the binary seed inputs of tests/fuzz/corpus/ with our own writers:
//   fuzz_make_seeds OUT_DIR   (creates OUT_DIR/{idx,cifar,npy,checkpoint,policy}/; configs are hand-written)
// The layouts are those the harnesses expect (see the comment at the top of each fuzz_*.cc).
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/ppo/state_encoder.h"
#include "framework/train/checkpoint.h"
#include "framework/train/checkpoint_file.h"
#include "tests/agent/policy_archive.h"
#include "tests/datasets/npy_writer.h"
#include "tests/fuzz/tiny_checkpoint.h"

namespace {

using Bytes = std::vector<uint8_t>;

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}
void put_le16(Bytes& b, size_t v) {
  b.push_back(static_cast<uint8_t>(v & 0xFF));
  b.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
}
void append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

Bytes gzip(const Bytes& in) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  Bytes out(deflateBound(&z, in.size()) + 32);
  z.next_in = const_cast<Bytes::value_type*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::printf("%8zu  %s\n", bytes.size(), path.c_str());
}
void write(const std::filesystem::path& path, const Bytes& b) {
  write(path, std::string(b.begin(), b.end()));
}

Bytes idx_images(uint32_t n, uint32_t h, uint32_t w) {
  Bytes b;
  for (uint32_t v : {0x803u, n, h, w}) put_be32(b, v);
  for (uint32_t i = 0; i < n * h * w; ++i) b.push_back(static_cast<uint8_t>(i * 37));
  return b;
}
Bytes idx_labels(uint32_t n) {
  Bytes b;
  for (uint32_t v : {0x801u, n}) put_be32(b, v);
  for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i % 10));
  return b;
}
Bytes idx_input(const Bytes& labels, const Bytes& images) {
  Bytes b;
  put_le16(b, labels.size());
  append(b, labels);
  append(b, images);
  return b;
}

Bytes cifar_records(int count, bool cifar100) {
  Bytes b;
  for (int r = 0; r < count; ++r) {
    if (cifar100) b.push_back(static_cast<uint8_t>(r % 20));
    b.push_back(static_cast<uint8_t>(cifar100 ? 40 + r : r % 10));
    for (int p = 0; p < 3072; ++p) b.push_back(static_cast<uint8_t>(p * 7 + r));
  }
  return b;
}
// fuzz_npy's layout: [u16 LE n][labels file][inputs file].
Bytes npy_input(const Bytes& labels, const Bytes& inputs) {
  Bytes b;
  put_le16(b, labels.size());
  append(b, labels);
  append(b, inputs);
  return b;
}

Bytes cifar_input(uint8_t flags, const Bytes& first, const Bytes& second) {
  Bytes b{flags};
  put_le16(b, first.size());
  append(b, first);
  append(b, second);
  return b;
}

std::string prefixed(uint8_t mode, uint8_t flags, const std::string& rest) {
  return std::string{static_cast<char>(mode), static_cast<char>(flags)} + rest;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out = argv[1];
  torch::manual_seed(1);

  write(out / "idx/two_4x4", idx_input(idx_labels(2), idx_images(2, 4, 4)));
  write(out / "idx/one_28x28", idx_input(idx_labels(1), idx_images(1, 28, 28)));
  write(out / "idx/two_4x4_gzip", idx_input(gzip(idx_labels(2)), gzip(idx_images(2, 4, 4))));

  write(out / "cifar/cifar10_one", cifar_input(0, {}, cifar_records(1, false)));
  write(out / "cifar/cifar100_augment", cifar_input(1 | 2, {}, cifar_records(1, true)));
  write(out / "cifar/cifar10_two_files", cifar_input(4, cifar_records(1, false), cifar_records(1, false)));
  write(out / "cifar/cifar10_gzip_two", cifar_input(2, {}, gzip(cifar_records(2, false))));

  using dynamix::testing::npy_bytes;
  using dynamix::testing::npy_data;
  using dynamix::testing::npy_header_dict;
  write(out / "npy/f4_3x2x2_i8",
        npy_input(npy_bytes(npy_header_dict("<i8", "(3,)"), npy_data<int64_t>({0, 1, 2})),
                  npy_bytes(npy_header_dict("<f4", "(3, 2, 2)"), npy_data(std::vector<float>(12, 0.5f)), 2)));
  write(out / "npy/u1_2x3_u1",
        npy_input(npy_bytes(npy_header_dict("|u1", "(2,)"), npy_data<uint8_t>({7, 9})),
                  npy_bytes(npy_header_dict("|u1", "(2, 3)"), npy_data<uint8_t>({1, 2, 3, 4, 5, 6}))));
  write(out / "npy/i4_1x1_i4",
        npy_input(npy_bytes(npy_header_dict("<i4", "(1,)"), npy_data<int32_t>({3})),
                  npy_bytes(npy_header_dict("<i4", "(1, 1)"), npy_data<int32_t>({42}), 3)));

  // A checkpoint of the tiny model after one step, as the trainer writes it (one rank).
  dynamix::fuzz::TinyRun run;
  run.step();
  const std::string payload =
      dynamix::encode_checkpoint(*run.model, *run.optimizer, dynamix::fuzz::tiny_progress(1));
  const std::string file = (out / "checkpoint.tmp").string();
  dynamix::write_checkpoint_file(file, payload);
  std::ifstream in(file, std::ios::binary);
  const std::string container((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(file);
  write(out / "checkpoint/container", prefixed(0, 0, container));
  write(out / "checkpoint/payload", prefixed(1, 0, payload));
  torch::serialize::InputArchive ar;
  std::istringstream payload_in(payload);
  ar.load_from(payload_in);
  c10::IValue meta;
  ar.read("meta", meta);
  write(out / "checkpoint/meta_one_rank", prefixed(2, 0x10, meta.toStringRef()));
  // Edits of that record (mode 3): none, then 'cursor' (key 2 in sorted order) set to the int 3.
  write(out / "checkpoint/meta_edits_none", prefixed(3, 0x10, ""));
  write(out / "checkpoint/meta_edit_cursor",
        prefixed(3, 0x10, std::string("\x02\x02\x03\0\0\0\0\0\0\0", 10)));

  // Policies (fuzz_policy.cc): a file, config lines, one stored tensor replaced. The mode byte
  // alone prefixes them; prefixed()'s second byte would be read as part of the rest.
  const dynamix::PpoConfig policy = dynamix::testing::small_policy_config();
  const std::string policy_file = dynamix::testing::policy_archive({}, policy, dynamix::to_string(policy));
  write(out / "policy/file", std::string(1, '\0') + policy_file);
  write(out / "policy/config_hidden_8", std::string(1, '\1') + "hidden=8,8\n");
  write(out / "policy/config_obs_clip", std::string(1, '\1') + "obs_clip=3\nprior_logit=0.5\n");
  std::string var{'\2', '\1', '\0', static_cast<char>(dynamix::kNodeFeatures)};
  for (int64_t j = 0; j < dynamix::kNodeFeatures; ++j) var += std::string("\0\0\0\0\0\0\xf0\x3f", 8);  // 1.0
  write(out / "policy/node_var_ones", var);
  write(out / "policy/updates_7", std::string("\2\6\2\1\7\0\0\0\0\0\0\0", 12));
  return 0;
}
