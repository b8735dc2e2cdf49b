// DYNAMIX — BERT encoder (post-LayerNorm, as the original) with a masked-LM or classification head.
#include "models/bert.h"

#include <cmath>

#include "framework/core/error.h"

namespace dynamix {
namespace {

namespace nn = torch::nn;

nn::LayerNorm layer_norm(const BertConfig& c) {
  return nn::LayerNorm(nn::LayerNormOptions({c.hidden}).eps(c.layer_norm_eps));
}

// Word + position + segment embeddings, then LayerNorm and dropout.
class Embeddings : public nn::Module {
 public:
  explicit Embeddings(const BertConfig& c)
      : word_(register_module("word_embeddings",
                              nn::Embedding(nn::EmbeddingOptions(c.vocab, c.hidden).padding_idx(0)))),
        position_(register_module("position_embeddings", nn::Embedding(c.max_positions, c.hidden))),
        token_type_(register_module("token_type_embeddings", nn::Embedding(c.type_vocab, c.hidden))),
        norm_(register_module("LayerNorm", layer_norm(c))),
        dropout_(register_module("dropout", nn::Dropout(c.dropout))) {}

  torch::Tensor forward(const torch::Tensor& ids) {
    auto positions = torch::arange(ids.size(1), ids.options()).unsqueeze(0);
    auto segments = torch::zeros_like(ids);  // one segment per sequence
    auto x = word_->forward(ids) + position_->forward(positions) + token_type_->forward(segments);
    return dropout_->forward(norm_->forward(x));
  }

  const torch::Tensor& word_weight() const { return word_->weight; }

 private:
  nn::Embedding word_, position_, token_type_;
  nn::LayerNorm norm_;
  nn::Dropout dropout_;
};

// Multi-head self-attention written with matmul/softmax (same code on every LibTorch version).
class SelfAttention : public nn::Module {
 public:
  explicit SelfAttention(const BertConfig& c)
      : heads_(c.heads),
        head_dim_(c.hidden / c.heads),
        query_(register_module("query", nn::Linear(c.hidden, c.hidden))),
        key_(register_module("key", nn::Linear(c.hidden, c.hidden))),
        value_(register_module("value", nn::Linear(c.hidden, c.hidden))),
        dropout_(register_module("dropout", nn::Dropout(c.dropout))) {}

  // x: [N, L, H]; pad: [N, 1, 1, L] true where the key is [PAD].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& pad) {
    const int64_t n = x.size(0), len = x.size(1);
    auto split = [&](const torch::Tensor& t) { return t.view({n, len, heads_, head_dim_}).transpose(1, 2); };
    auto q = split(query_->forward(x)), k = split(key_->forward(x)), v = split(value_->forward(x));
    auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim_));
    // A large finite fill keeps fully padded rows finite (uniform weights) instead of NaN.
    const double fill = scores.scalar_type() == torch::kHalf ? -6.0e4 : -1.0e30;
    auto probs = dropout_->forward(torch::softmax(scores.masked_fill(pad, fill), -1));
    return torch::matmul(probs, v).transpose(1, 2).reshape({n, len, heads_ * head_dim_});
  }

 private:
  int64_t heads_, head_dim_;
  nn::Linear query_, key_, value_;
  nn::Dropout dropout_;
};

// Post-LN layer: x = LN(x + attn(x)); x = LN(x + ffn(x)).
class EncoderLayer : public nn::Module {
 public:
  explicit EncoderLayer(const BertConfig& c)
      : attention_(register_module("attention", std::make_shared<SelfAttention>(c))),
        attention_out_(register_module("attention_output", nn::Linear(c.hidden, c.hidden))),
        attention_norm_(register_module("attention_LayerNorm", layer_norm(c))),
        intermediate_(register_module("intermediate", nn::Linear(c.hidden, c.intermediate))),
        output_(register_module("output", nn::Linear(c.intermediate, c.hidden))),
        output_norm_(register_module("output_LayerNorm", layer_norm(c))),
        dropout_(register_module("dropout", nn::Dropout(c.dropout))) {}

  torch::Tensor forward(torch::Tensor x, const torch::Tensor& pad) {
    auto a = dropout_->forward(attention_out_->forward(attention_->forward(x, pad)));
    x = attention_norm_->forward(x + a);
    auto f = dropout_->forward(output_->forward(torch::gelu(intermediate_->forward(x))));
    return output_norm_->forward(x + f);
  }

 private:
  std::shared_ptr<SelfAttention> attention_;
  nn::Linear attention_out_;
  nn::LayerNorm attention_norm_;
  nn::Linear intermediate_, output_;
  nn::LayerNorm output_norm_;
  nn::Dropout dropout_;
};

class Bert : public Model {
 public:
  Bert(const BertConfig& c, bool mlm, int64_t num_classes) : mlm_(mlm) {
    embeddings_ = register_module("embeddings", std::make_shared<Embeddings>(c));
    auto list = register_module("encoder", nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      layers_.push_back(std::make_shared<EncoderLayer>(c));
      list->push_back(layers_.back());
    }
    if (mlm_) {
      // Decoder weight is the word-embedding matrix itself; only its bias is a new parameter.
      transform_ = register_module("transform", nn::Linear(c.hidden, c.hidden));
      transform_norm_ = register_module("transform_LayerNorm", layer_norm(c));
      decoder_bias_ = register_parameter("decoder_bias", torch::zeros({c.vocab}));
    } else {
      pooler_ = register_module("pooler", nn::Linear(c.hidden, c.hidden));
      dropout_ = register_module("dropout", nn::Dropout(c.dropout));
      classifier_ = register_module("classifier", nn::Linear(c.hidden, num_classes));
    }
    init_weights();
  }

  torch::Tensor forward(torch::Tensor ids) override {
    DYNAMIX_CHECK(ids.dim() == 2 && ids.scalar_type() == torch::kLong,
                  "BERT expects int64 token ids [N, L], got a " + std::to_string(ids.dim()) + "-d " +
                      c10::toString(ids.scalar_type()) + " tensor");
    auto pad = ids.eq(0).unsqueeze(1).unsqueeze(2);
    auto h = embeddings_->forward(ids);
    for (auto& layer : layers_) h = layer->forward(h, pad);
    if (mlm_) {
      h = transform_norm_->forward(torch::gelu(transform_->forward(h)));
      return torch::nn::functional::linear(h, embeddings_->word_weight(), decoder_bias_);
    }
    auto pooled = torch::tanh(pooler_->forward(h.select(1, 0)));
    return classifier_->forward(dropout_->forward(pooled));
  }

 private:
  // BERT's initialization: N(0, 0.02) weights, zero biases, LayerNorm at identity, [PAD] row zero.
  void init_weights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* l = m->as<nn::Linear>()) {
        nn::init::normal_(l->weight, 0.0, 0.02);
        nn::init::zeros_(l->bias);
      } else if (auto* e = m->as<nn::Embedding>()) {
        nn::init::normal_(e->weight, 0.0, 0.02);
        if (e->options.padding_idx()) e->weight[*e->options.padding_idx()].zero_();
      } else if (auto* ln = m->as<nn::LayerNorm>()) {
        nn::init::ones_(ln->weight);
        nn::init::zeros_(ln->bias);
      }
    }
  }

  bool mlm_;
  std::shared_ptr<Embeddings> embeddings_;
  std::vector<std::shared_ptr<EncoderLayer>> layers_;
  nn::Linear transform_{nullptr};
  nn::LayerNorm transform_norm_{nullptr};
  torch::Tensor decoder_bias_;
  nn::Linear pooler_{nullptr};
  nn::Dropout dropout_{nullptr};
  nn::Linear classifier_{nullptr};
};

}  // namespace

BertConfig bert_config(const std::string& name) {
  BertConfig c;
  if (name == "bert_tiny") {
    c.layers = 2, c.hidden = 128, c.heads = 2;
  } else if (name == "bert_mini") {
    c.layers = 4, c.hidden = 256, c.heads = 4;
  } else if (name == "bert_small") {
    c.layers = 4, c.hidden = 512, c.heads = 8;
  } else if (name == "bert_base") {
    c.layers = 12, c.hidden = 768, c.heads = 12;
  } else {
    throw Error("unknown BERT size '" + name + "' (expected bert_tiny, bert_mini, bert_small, bert_base)");
  }
  c.intermediate = 4 * c.hidden;
  return c;
}

ModelPtr make_bert(BertConfig config, const ModelSpec& spec) {
  DYNAMIX_CHECK(config.hidden % config.heads == 0, "BERT hidden size " + std::to_string(config.hidden) +
                                                       " is not a multiple of the head count " +
                                                       std::to_string(config.heads));
  const bool mlm = spec.task == "mlm";
  if (mlm) config.vocab = spec.num_classes;
  return std::make_shared<Bert>(config, mlm, spec.num_classes);
}

}  // namespace dynamix
