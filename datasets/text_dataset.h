// DYNAMIX — masked-language-model data from a plain-text file, chunked into fixed-length rows.
#pragma once

#include <string>

#include "datasets/dataset.h"
#include "datasets/vocab.h"

namespace dynamix {

// Rows [CLS] t_1 .. t_{L-2} [SEP] of consecutive tokens of the text (the last row padded with
// [PAD]); get() applies BERT masking (mask_tokens) keyed by (seed, index).
class TextMlmDataset : public Dataset {
 public:
  TextMlmDataset(torch::Tensor rows, int64_t vocab_size, SpecialTokens special);
  int64_t size() const override { return rows_.size(0); }
  std::vector<int64_t> sample_shape() const override { return {rows_.size(1)}; }
  int64_t num_classes() const override { return vocab_size_; }
  std::string task() const override { return "mlm"; }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

  const torch::Tensor& rows() const { return rows_; }  // clean token ids, int64 [N, L]

 private:
  torch::Tensor rows_;
  int64_t vocab_size_;
  SpecialTokens special_;
};

// Tokenizes the text file at `path` (vocabulary from `vocab_path`, or built from the text when
// empty), chunks it into rows of `seq_len`, and puts the last tenth of the rows (at least one) in
// the test split.
DatasetSplits load_text_mlm(const std::string& path, const std::string& vocab_path, int64_t seq_len);

// Chunks a token stream into [CLS] ... [SEP] rows of length seq_len (>= 3).
torch::Tensor chunk_tokens(const std::vector<int64_t>& ids, int64_t seq_len, const SpecialTokens& special);

}  // namespace dynamix
