// DYNAMIX — BERT-style masked-language-model corruption, keyed by (seed, index).
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"

namespace dynamix {

struct SpecialTokens {
  int64_t pad = 0, unk = 1, cls = 2, sep = 3, mask = 4;
  bool is_special(int64_t id) const { return id == pad || id == unk || id == cls || id == sep || id == mask; }
};

// Given clean token rows [N, L] (int64) for dataset `indices`, selects 15% of the non-special
// positions of each row (at least one when the row has any), replaces 80% of those with [MASK],
// 10% with a random non-special token, keeps 10%; targets hold the original id there, -100
// elsewhere. Row k's choices depend only on (seed, indices[k]).
Batch mask_tokens(torch::Tensor rows, const std::vector<int64_t>& indices, uint64_t seed,
                  const SpecialTokens& special, int64_t vocab_size);

}  // namespace dynamix
