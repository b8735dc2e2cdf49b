// DYNAMIX fuzz target — .npy reader: header parsing, size checks, the memory map, the data set's
// checks of inputs against labels, and batches.
// Input: [u16 LE n][n bytes: labels file][rest: inputs file]; each goes through a file in memory,
// mapped as on disk.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/npy_array.h"
#include "datasets/npy_dataset.h"
#include "framework/core/error.h"
#include "tests/fuzz/dataset_checks.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
constexpr int64_t kClasses = 100;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dynamix::fuzz::ByteReader in(data, size);
  const size_t label_len = in.le16();
  const std::vector<uint8_t> label_bytes = in.take(label_len), input_bytes = in.rest();
  const dynamix::fuzz::MemFile labels_file(label_bytes.data(), label_bytes.size());
  const dynamix::fuzz::MemFile inputs_file(input_bytes.data(), input_bytes.size());
  try {
    dynamix::NpyArray labels = dynamix::load_npy(labels_file.path());
    dynamix::NpyArray inputs = dynamix::load_npy(inputs_file.path());
    const dynamix::NpyHeader h = dynamix::parse_npy_header(input_bytes.data(), input_bytes.size(), "inputs");
    if (inputs.data.nbytes() != h.data_bytes || h.data_offset + h.data_bytes != input_bytes.size()) {
      dynamix::fuzz::fail("the array does not cover exactly the data after the header");
    }
    const dynamix::NpyDataset ds(std::move(inputs), std::move(labels), kClasses);
    dynamix::fuzz::check_batches(ds, kClasses);
  } catch (const dynamix::Error&) {
  }
  return 0;
}
