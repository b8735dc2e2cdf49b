// DYNAMIX — BERT encoder (post-LayerNorm, as the original) with a masked-LM or classification head.
#pragma once

#include "models/model.h"

namespace dynamix {

// Encoder sizes; the defaults are BERT's (vocabulary, positions, segments, GELU, LayerNorm eps).
struct BertConfig {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t intermediate = 3072;
  int64_t vocab = 30522;
  int64_t max_positions = 512;
  int64_t type_vocab = 2;
  double dropout = 0.1;  // hidden and attention-probability dropout
  double layer_norm_eps = 1e-12;
};

// Sizes by name: bert_tiny (L2/H128/A2), bert_mini (L4/H256/A4), bert_small (L4/H512/A8),
// bert_base (L12/H768/A12); intermediate = 4 x hidden. Unknown names throw dynamix::Error.
BertConfig bert_config(const std::string& name);

// spec.input_shape is {seq_len} (<= max_positions); input to forward is int64 token ids [N, L],
// id 0 is [PAD] and is masked out of attention. task "mlm": logits [N, L, vocab] with the vocabulary
// size taken from spec.num_classes and the decoder tied to the word embeddings; task "classify":
// pooled [CLS] -> logits [N, num_classes].
ModelPtr make_bert(BertConfig config, const ModelSpec& spec);

}  // namespace dynamix
