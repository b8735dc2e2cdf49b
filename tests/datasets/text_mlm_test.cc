// DYNAMIX tests — text MLM: vocabulary, WordPiece, chunking, masking statistics and determinism.
#include <gtest/gtest.h>

#include "datasets/mlm_masking.h"
#include "datasets/text_dataset.h"
#include "datasets/vocab.h"
#include "framework/core/error.h"
#include "tests/datasets/temp_dir.h"

namespace dynamix {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(Vocab, BuiltFromTextByFrequency) {
  Vocab v = Vocab::build("The cat sat. the dog sat, THE end!");
  EXPECT_EQ(v.id("[PAD]"), 0);
  EXPECT_EQ(v.id("[MASK]"), 4);
  EXPECT_EQ(v.token(5), "the");  // 3 times
  EXPECT_EQ(v.token(6), "sat");  // 2 times
  EXPECT_EQ(v.size(), 5 + 8);    // the sat ! , . cat dog end
  std::vector<int64_t> ids = v.encode("The cat, zebra");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], v.id("the"));
  EXPECT_EQ(ids[1], v.id("cat"));
  EXPECT_EQ(ids[2], v.id(","));
  EXPECT_EQ(ids[3], v.special().unk);
}

TEST(Vocab, WordPieceGreedyLongestMatch) {
  TempDir d;
  write_text(d.file("vocab.txt"),
             "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nun\nunaff\n##aff\n##able\n##a\nrunn\n##ing\n.\n");
  Vocab v = Vocab::load(d.file("vocab.txt"));
  EXPECT_TRUE(v.wordpiece());
  EXPECT_TRUE(v.lowercase());
  std::vector<int64_t> ids = v.encode("Unaffable the running. xyz");
  std::vector<std::string> toks;
  for (int64_t id : ids) toks.push_back(v.token(id));
  EXPECT_EQ(toks, (std::vector<std::string>{"unaff", "##able", "the", "runn", "##ing", ".", "[UNK]"}));
}

TEST(Vocab, FileWithoutSpecialsGetsThemAppended) {
  TempDir d;
  write_text(d.file("v.txt"), "hello\nworld\n");
  Vocab v = Vocab::load(d.file("v.txt"));
  EXPECT_FALSE(v.wordpiece());
  EXPECT_EQ(v.size(), 7);
  EXPECT_EQ(v.id("hello"), 0);
  EXPECT_EQ(v.special().mask, 6);
  EXPECT_THROW(Vocab::load(d.file("missing.txt")), Error);
}

TEST(TextMlm, ChunksIntoClsSepRows) {
  SpecialTokens sp;
  torch::Tensor rows = chunk_tokens({10, 11, 12, 13, 14, 15, 16}, 5, sp);  // 3 tokens per row
  ASSERT_EQ(rows.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_TRUE(torch::equal(rows[0], torch::tensor({2, 10, 11, 12, 3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(rows[2], torch::tensor({2, 16, 3, 0, 0}, torch::kInt64)));
}

std::string corpus() {
  std::string text;
  const char* words[] = {"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"};
  for (int i = 0; i < 20000; ++i)
    text += std::string(words[(i * 7 + i / 13) % 10]) + (i % 17 == 16 ? ".\n" : " ");
  return text;
}

TEST(TextMlm, MaskingStatisticsAndDeterminism) {
  TempDir d;
  write_text(d.file("corpus.txt"), corpus());
  DatasetSpec spec{"text", d.file("corpus.txt")};
  spec.seq_len = 64;
  DatasetSplits s = load_dataset(spec);
  EXPECT_EQ(s.train->task(), "mlm");
  EXPECT_EQ(s.train->num_classes(), 5 + 11);  // 10 words and "."
  const int64_t n = s.train->size() + s.test->size();
  EXPECT_EQ(n, (21176 + 61) / 62);  // 20000 words + 1176 periods, 62 per row
  EXPECT_EQ(s.test->size(), n / 10);

  std::vector<int64_t> idx(s.train->size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  Batch b = s.train->get(idx, 123);
  const torch::Tensor& clean = static_cast<TextMlmDataset&>(*s.train).rows();
  torch::Tensor target = b.targets.ne(-100);
  torch::Tensor content = clean.ge(5);  // non-special positions
  const double rate = target.sum().item<double>() / content.sum().item<double>();
  EXPECT_NEAR(rate, 0.15, 0.01);
  EXPECT_FALSE(target.logical_and(content.logical_not()).any().item<bool>());  // specials never targets
  EXPECT_TRUE(torch::equal(b.targets.masked_select(target), clean.masked_select(target)));
  EXPECT_TRUE(
      torch::equal(b.inputs.masked_select(target.logical_not()), clean.masked_select(target.logical_not())));
  const double masked = b.inputs.eq(4).logical_and(target).sum().item<double>() / target.sum().item<double>();
  const double kept =
      b.inputs.eq(clean).logical_and(target).sum().item<double>() / target.sum().item<double>();
  EXPECT_NEAR(masked, 0.8, 0.02);
  EXPECT_NEAR(kept, 0.1 + 0.1 / 11, 0.02);  // kept, plus random draws that hit the same word
  EXPECT_TRUE(b.inputs.lt(16).all().item<bool>());

  // Same (seed, index) -> same masking in any batch; another seed -> another masking.
  Batch p = s.train->get({7, 3}, 123), q = s.train->get({3, 7}, 123), r = s.train->get({7, 3}, 124);
  EXPECT_TRUE(torch::equal(p.inputs[0], q.inputs[1]));
  EXPECT_TRUE(torch::equal(p.targets[1], q.targets[0]));
  EXPECT_TRUE(torch::equal(p.inputs[0], b.inputs[7]));
  EXPECT_FALSE(torch::equal(p.targets, r.targets));
}

TEST(TextMlm, TooLittleTextOrNoFile) {
  TempDir d;
  write_text(d.file("tiny.txt"), "just a few words");
  EXPECT_THROW(load_dataset({"text", d.file("tiny.txt")}), Error);
  try {
    load_dataset({"text", d.file("none.txt")});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(d.file("none.txt")), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dynamix
