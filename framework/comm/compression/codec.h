// DYNAMIX — gradient codecs on the allreduce path (comm.compression: none | fp16 | bf16 | hlc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "framework/comm/communicator.h"
#include "framework/config/choices.h"

namespace dynamix {

// What one allreduce_sum call did; overwritten by every call (the trainer writes it to metrics).
struct CodecStats {
  std::string path;              // "dense" | "fp16" | "bf16" | "hlc"
  size_t count = 0;              // elements in the buffer
  size_t union_count = 0;        // hlc: non-zeros in the union of all ranks' supports
  double union_density = 0.0;    // union_count / count (hlc; 1 for the other codecs)
  size_t bytes_sent = 0;         // payload this rank handed to collectives, all rounds
  size_t dense_bytes = 0;        // payload of a dense float32 allreduce (4 * count)
  double peeled_fraction = 0.0;  // hlc: union entries recovered by peeling / union_count
  size_t fallback_count = 0;     // hlc: entries reduced densely (did not peel, or off the grid)
  size_t off_grid_count = 0;     // hlc: entries with a value not exact in fixed point (or non-finite)
  int rounds = 0;                // collectives issued
};

struct CodecOptions {
  double hlc_ratio = 1.5;              // sketch cells per union entry (per 1024-element block, >= 3)
  uint64_t hlc_seed = 0x5eed0f41cull;  // hash seed, identical on all ranks
  bool hlc_auto = true;                // choose dense when the byte model says hlc does not pay
  // hlc is chosen when its predicted payload is below this fraction of the dense payload; the rest
  // pays for encode/decode CPU time (calibrated in docs/COMPRESSION.md).
  double hlc_max_bytes_fraction = 0.5;
};

// In-place SUM allreduce of float32 gradients. The buffer already holds b_i/B-weighted gradients,
// so the SUM is the weighted average. Every rank ends with the same buffer.
class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  virtual std::string name() const = 0;
  virtual void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) = 0;
  // Whether `data` may be device (CUDA) memory; otherwise the caller stages device buffers
  // through host memory.
  virtual bool accepts_device_memory() const { return false; }
};

// The codec comm.compression names.
std::unique_ptr<GradientCodec> make_codec(Compression compression, const CodecOptions& options = {});

}  // namespace dynamix
