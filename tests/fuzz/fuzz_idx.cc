// DYNAMIX fuzz target — IDX reader (MNIST / Fashion-MNIST): header and size checks, labels, batches.
// Input: [u16 LE n][n bytes: label file][rest: image file]. A part that starts with the gzip
// magic goes through read_maybe_gz (as a file in memory) first, as it does on disk.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/file_reader.h"
#include "datasets/idx_dataset.h"
#include "framework/core/error.h"
#include "tests/fuzz/dataset_checks.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dynamix::fuzz::ByteReader in(data, size);
  const size_t label_len = in.le16();
  try {
    const std::vector<uint8_t> labels = dynamix::fuzz::maybe_gunzip(in.take(label_len));
    const std::vector<uint8_t> images = dynamix::fuzz::maybe_gunzip(in.rest());
    const dynamix::IdxDataset ds(images, "images", labels, "labels", 0.2860f, 0.3530f);
    const int64_t n = ds.size();
    if (ds.labels().size(0) != n) dynamix::fuzz::fail("images and labels differ in count");
    if (n == 0) return 0;
    if (ds.labels().min().item<int64_t>() < 0 || ds.labels().max().item<int64_t>() >= ds.num_classes()) {
      dynamix::fuzz::fail("a label outside [0, num_classes) was accepted");
    }
    dynamix::fuzz::check_batches(ds);
  } catch (const dynamix::Error&) {
  }
  return 0;
}
