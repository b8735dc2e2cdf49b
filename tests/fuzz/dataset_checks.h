// DYNAMIX fuzz helpers — what every accepted data set must do with batches, whatever its reader.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace dynamix::fuzz {

// A batch of the first and last samples has shape [2, sample_shape...] and, when `classes` > 0,
// targets in [0, classes); index size() is refused with dynamix::Error. `ds` must hold a sample.
inline Batch check_batches(const Dataset& ds, int64_t classes = 0) {
  const int64_t n = ds.size();
  const Batch b = ds.get({0, n - 1}, 1);
  std::vector<int64_t> want{2};
  for (int64_t d : ds.sample_shape()) want.push_back(d);
  if (b.inputs.sizes() != c10::IntArrayRef(want)) fail("batch shape does not match sample_shape()");
  if (classes > 0 && (b.targets.min().item<int64_t>() < 0 || b.targets.max().item<int64_t>() >= classes)) {
    fail("a label outside [0, num_classes) was accepted");
  }
  try {
    ds.get({n}, 1);
    fail("index n was accepted");
  } catch (const Error&) {
  }
  return b;
}

}  // namespace dynamix::fuzz
