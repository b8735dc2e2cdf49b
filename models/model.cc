// DYNAMIX — helpers shared by every model.
#include "models/model.h"

namespace dynamix {

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace dynamix
