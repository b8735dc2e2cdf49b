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

std::unique_ptr<GradientCodec> make_codec(const std::string& name, const CodecOptions& options) {
  if (name == "none") return std::make_unique<DenseCodec>();
  if (name == "fp16") return std::make_unique<HalfCodec>(false);
  if (name == "bf16") return std::make_unique<HalfCodec>(true);
  if (name == "hlc") return std::make_unique<HlcCodec>(options);
  throw Error("comm.compression: unknown codec '" + name + "' (expected none | fp16 | bf16 | hlc)");
}

}  // namespace dynamix
