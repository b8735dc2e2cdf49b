// DYNAMIX — word-level or WordPiece vocabulary and the tokenizer that uses it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/mlm_masking.h"

namespace dynamix {

class Vocab {
 public:
  // Built from text: [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4), then words by falling frequency
  // (ties alphabetical), at most `max_size` entries in all. Words are lowercased.
  static Vocab build(const std::string& text, int64_t max_size = 30000);
  // One token per line (id = position among non-empty lines). Tokens starting with "##" switch on
  // greedy longest-match WordPiece; special tokens missing from the file are appended. Text is
  // lowercased unless the file holds upper-case tokens (a cased vocabulary).
  static Vocab load(const std::string& path);

  // Splits on whitespace, makes each ASCII punctuation character a token, then maps words (or
  // word pieces) to ids; unknown words become [UNK].
  std::vector<int64_t> encode(const std::string& text) const;

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t id(const std::string& token) const;  // -1 if absent
  const std::string& token(int64_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  const SpecialTokens& special() const { return special_; }
  bool wordpiece() const { return wordpiece_; }
  bool lowercase() const { return lowercase_; }

 private:
  void add(const std::string& token);
  void resolve_specials();
  void encode_word(const std::string& word, std::vector<int64_t>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  SpecialTokens special_;
  bool wordpiece_ = false;
  bool lowercase_ = true;
};

// Basic pre-tokenization shared by build() and encode(): whitespace split, punctuation split.
std::vector<std::string> split_words(const std::string& text, bool lowercase);

}  // namespace dynamix
