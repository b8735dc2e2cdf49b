// DYNAMIX — MLM masking: one counter-based generator per sample, so ranks agree without sharing.
#include "datasets/mlm_masking.h"

#include "datasets/sample_rng.h"

namespace dynamix {
namespace {

constexpr double kMaskRate = 0.15;  // BERT: fraction of positions predicted
constexpr int64_t kIgnore = -100;   // cross_entropy's default ignore_index

void corrupt(int64_t* id, SampleRng& rng, const SpecialTokens& special, int64_t vocab_size) {
  const double r = rng.uniform();
  if (r < 0.8) {
    *id = special.mask;
  } else if (r < 0.9) {
    int64_t t;
    do {
      t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(vocab_size)));
    } while (special.is_special(t));
    *id = t;
  }  // else: keep the original token, still predicted
}

}  // namespace

Batch mask_tokens(torch::Tensor rows, const std::vector<int64_t>& indices, uint64_t seed,
                  const SpecialTokens& special, int64_t vocab_size) {
  rows = rows.contiguous();
  const int64_t n = rows.size(0), len = rows.size(1);
  torch::Tensor targets = torch::full({n, len}, kIgnore, torch::kInt64);
  int64_t* x = rows.data_ptr<int64_t>();
  int64_t* y = targets.data_ptr<int64_t>();
  std::vector<int64_t> candidates;
  for (int64_t k = 0; k < n; ++k) {
    SampleRng rng(seed, static_cast<uint64_t>(indices[k]), /*stream=*/2);
    int64_t* xr = x + k * len;
    int64_t* yr = y + k * len;
    candidates.clear();
    bool any = false;
    for (int64_t p = 0; p < len; ++p) {
      if (special.is_special(xr[p])) continue;
      candidates.push_back(p);
      if (rng.uniform() < kMaskRate) {
        yr[p] = xr[p];
        corrupt(&xr[p], rng, special, vocab_size);
        any = true;
      }
    }
    // A row with no target would contribute nothing (and a batch of them a NaN mean loss).
    if (!any && !candidates.empty()) {
      const int64_t p = candidates[rng.below(candidates.size())];
      yr[p] = xr[p];
      corrupt(&xr[p], rng, special, vocab_size);
    }
  }
  return {rows, targets};
}

}  // namespace dynamix
