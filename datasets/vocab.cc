// DYNAMIX — vocabulary building/loading and greedy longest-match WordPiece.
#include "datasets/vocab.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "datasets/file_reader.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

const char* const kSpecials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
constexpr size_t kMaxWordChars = 100;  // longer "words" are noise: map them to [UNK]

bool is_special_text(const std::string& t) {
  return std::find(std::begin(kSpecials), std::end(kSpecials), t) != std::end(kSpecials);
}

}  // namespace

std::vector<std::string> split_words(const std::string& text, bool lowercase) {
  std::vector<std::string> words;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      flush();
    } else if (c < 128 && std::ispunct(c)) {
      flush();
      words.emplace_back(1, ch);
    } else {
      cur.push_back(lowercase && c < 128 ? static_cast<char>(std::tolower(c)) : ch);
    }
  }
  flush();
  return words;
}

void Vocab::add(const std::string& token) {
  if (ids_.emplace(token, size()).second) tokens_.push_back(token);
}

void Vocab::resolve_specials() {
  for (const char* s : kSpecials) add(s);
  special_ = {id("[PAD]"), id("[UNK]"), id("[CLS]"), id("[SEP]"), id("[MASK]")};
}

int64_t Vocab::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

Vocab Vocab::build(const std::string& text, int64_t max_size) {
  std::unordered_map<std::string, int64_t> counts;
  for (std::string& w : split_words(text, true)) {
    if (w.size() <= kMaxWordChars) ++counts[w];
  }
  std::vector<std::pair<std::string, int64_t>> by_freq(counts.begin(), counts.end());
  std::sort(by_freq.begin(), by_freq.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  Vocab v;
  v.resolve_specials();
  for (const auto& [word, count] : by_freq) {
    if (v.size() >= max_size) break;
    if (!is_special_text(word)) v.add(word);
  }
  return v;
}

Vocab Vocab::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": vocabulary file not found or unreadable (dataset.vocab)");
  Vocab v;
  std::string line;
  bool upper = false;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (line.empty()) continue;
    if (line.rfind("##", 0) == 0 && line.size() > 2) v.wordpiece_ = true;
    if (!is_special_text(line) && line.front() != '[' &&
        std::any_of(line.begin(), line.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
      upper = true;
    }
    v.add(line);
  }
  if (v.size() == 0) throw Error(path + ": vocabulary file is empty (dataset.vocab)");
  v.lowercase_ = !upper;
  v.resolve_specials();
  return v;
}

void Vocab::encode_word(const std::string& word, std::vector<int64_t>& out) const {
  if (word.size() > kMaxWordChars) {
    out.push_back(special_.unk);
    return;
  }
  int64_t whole = id(word);
  if (whole >= 0 || !wordpiece_) {
    out.push_back(whole >= 0 ? whole : special_.unk);
    return;
  }
  // Greedy longest match from the left; continuation pieces carry "##". If any position has no
  // matching piece, the whole word is [UNK] (as BERT does).
  const size_t first = out.size();
  for (size_t start = 0; start < word.size();) {
    int64_t piece = -1;
    size_t end = word.size();
    for (; end > start; --end) {
      piece = id((start > 0 ? "##" : "") + word.substr(start, end - start));
      if (piece >= 0) break;
    }
    if (piece < 0) {
      out.resize(first);
      out.push_back(special_.unk);
      return;
    }
    out.push_back(piece);
    start = end;
  }
}

std::vector<int64_t> Vocab::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  for (const std::string& w : split_words(text, lowercase_)) encode_word(w, ids);
  return ids;
}

}  // namespace dynamix
