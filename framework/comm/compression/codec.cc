// DYNAMIX — codec factory and the plain dense codec.
#include "framework/comm/compression/codec.h"

#include "framework/comm/compression/half_codec.h"
#include "framework/comm/compression/hlc_codec.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

class DenseCodec final : public GradientCodec {
 public:
  std::string name() const override { return "none"; }
  void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) override {
    comm.allreduce_sum(data, count, DType::kFloat32);
    if (stats) {
      *stats = CodecStats{};
      stats->path = "dense";
      stats->count = count;
      stats->union_count = count;
      stats->union_density = 1.0;
      stats->bytes_sent = 4 * count;
      stats->dense_bytes = 4 * count;
      stats->rounds = 1;
    }
  }
};

}  // namespace

std::unique_ptr<GradientCodec> make_codec(Compression compression, const CodecOptions& options) {
  switch (compression) {
    case Compression::kNone:
      return std::make_unique<DenseCodec>();
    case Compression::kFp16:
      return std::make_unique<HalfCodec>(false);
    case Compression::kBf16:
      return std::make_unique<HalfCodec>(true);
    case Compression::kHlc:
      return std::make_unique<HlcCodec>(options);
  }
  throw Error("comm.compression: unknown codec " + std::to_string(static_cast<int>(compression)));
}

}  // namespace dynamix
