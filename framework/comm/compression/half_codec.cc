// DYNAMIX — fp16 / bf16 allreduce codecs.
#include "framework/comm/compression/half_codec.h"

#include "kernels/hlc/half.h"

namespace dynamix {

void HalfCodec::allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) {
  wire_.resize(count);
  if (bf16_) {
    floats_to_bf16(data, count, wire_.data());
  } else {
    floats_to_fp16(data, count, wire_.data());
  }
  comm.allreduce_sum(wire_.data(), count, bf16_ ? DType::kBFloat16 : DType::kFloat16);
  if (bf16_) {
    bf16s_to_float(wire_.data(), count, data);
  } else {
    fp16s_to_float(wire_.data(), count, data);
  }
  if (stats) {
    *stats = CodecStats{};
    stats->path = name();
    stats->count = count;
    stats->union_count = count;
    stats->union_density = 1.0;
    stats->bytes_sent = 2 * count;
    stats->dense_bytes = 4 * count;
    stats->rounds = 1;
  }
}

}  // namespace dynamix
