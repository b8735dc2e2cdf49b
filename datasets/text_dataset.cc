// DYNAMIX — text MLM: tokenize once at load, mask per batch.
#include "datasets/text_dataset.h"

#include "datasets/file_reader.h"
#include "datasets/idx_dataset.h"
#include "framework/core/error.h"

namespace dynamix {

TextMlmDataset::TextMlmDataset(torch::Tensor rows, int64_t vocab_size, SpecialTokens special)
    : rows_(std::move(rows)), vocab_size_(vocab_size), special_(special) {}

Batch TextMlmDataset::get(const std::vector<int64_t>& indices, uint64_t seed) const {
  torch::Tensor idx = index_tensor(indices, size());
  return mask_tokens(rows_.index_select(0, idx), indices, seed, special_, vocab_size_);
}

torch::Tensor chunk_tokens(const std::vector<int64_t>& ids, int64_t seq_len, const SpecialTokens& special) {
  const int64_t body = seq_len - 2;
  const int64_t n = (static_cast<int64_t>(ids.size()) + body - 1) / body;
  torch::Tensor rows = torch::full({n, seq_len}, special.pad, torch::kInt64);
  int64_t* r = rows.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t* row = r + k * seq_len;
    const int64_t begin = k * body, end = std::min<int64_t>(begin + body, ids.size());
    row[0] = special.cls;
    std::copy(ids.begin() + begin, ids.begin() + end, row + 1);
    row[1 + end - begin] = special.sep;
  }
  return rows;
}

DatasetSplits load_text_mlm(const std::string& path, const std::string& vocab_path, int64_t seq_len) {
  if (path.empty()) throw Error("dataset.path: the text dataset needs a plain-text file");
  if (seq_len < 3) throw Error("dataset.seq_len must be at least 3, got " + std::to_string(seq_len));
  std::vector<uint8_t> bytes = read_maybe_gz(path);
  const std::string text(bytes.begin(), bytes.end());
  const Vocab vocab = vocab_path.empty() ? Vocab::build(text) : Vocab::load(vocab_path);
  torch::Tensor rows = chunk_tokens(vocab.encode(text), seq_len, vocab.special());
  const int64_t n = rows.size(0);
  if (n < 2) {
    throw Error(path + ": too little text: " + std::to_string(n) + " sequence(s) of dataset.seq_len=" +
                std::to_string(seq_len) + " tokens, need at least 2 (one per split)");
  }
  const int64_t n_test = std::max<int64_t>(1, n / 10);
  DatasetSplits s;
  s.train =
      std::make_shared<TextMlmDataset>(rows.slice(0, 0, n - n_test).clone(), vocab.size(), vocab.special());
  s.test =
      std::make_shared<TextMlmDataset>(rows.slice(0, n - n_test, n).clone(), vocab.size(), vocab.special());
  return s;
}

}  // namespace dynamix
