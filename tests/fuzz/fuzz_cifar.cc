// DYNAMIX fuzz target — CIFAR-10/100 binary reader: record size and label checks, augmented batches.
// Input: [flags][u16 LE n][rest]. flags bit 0: CIFAR-100, bit 1: augment, bit 2: two files (the
// first n bytes, then the rest), else one file (the rest). A file that starts with the gzip magic
// goes through read_maybe_gz (as a file in memory) first, as it does on disk.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/cifar_dataset.h"
#include "datasets/file_reader.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dynamix::fuzz::ByteReader in(data, size);
  const uint8_t flags = in.byte();
  const size_t first_len = in.le16();
  const bool cifar100 = flags & 1, augment = flags & 2, two_files = flags & 4;
  try {
    std::vector<std::string> names{"data_batch_1.bin"};
    std::vector<std::vector<uint8_t>> contents;
    if (two_files) {
      contents.push_back(dynamix::fuzz::maybe_gunzip(in.take(first_len)));
      names.push_back("data_batch_2.bin");
    }
    contents.push_back(dynamix::fuzz::maybe_gunzip(in.rest()));
    const dynamix::CifarFormat format = cifar100 ? dynamix::cifar100_format() : dynamix::cifar10_format();
    const dynamix::CifarDataset ds(names, contents, format, augment);
    const int64_t n = ds.size();
    if (n < 1 || ds.labels().size(0) != n) dynamix::fuzz::fail("accepted a data set without records");
    if (ds.labels().min().item<int64_t>() < 0 || ds.labels().max().item<int64_t>() >= ds.num_classes()) {
      dynamix::fuzz::fail("a label outside [0, num_classes) was accepted");
    }
    const dynamix::Batch b = ds.get({n - 1, 0}, flags);
    if (b.inputs.sizes() != c10::IntArrayRef({2, 3, 32, 32}) || !b.inputs.isfinite().all().item<bool>()) {
      dynamix::fuzz::fail("batch has the wrong shape or non-finite values");
    }
  } catch (const dynamix::Error&) {
  }
  return 0;
}
