// BPE training (BpeTokenizer::train): word counts over pre-tokenized chunks, pair counts with an inverted
// index from pair to the words holding it, and a lazy max-heap, so each merge only revisits the words that
// contain the merged pair.
#include <algorithm>
#include <queue>
#include <unordered_set>

#include "data/tokenizer/bpe_tokenizer.h"
#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/pretokenizer.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

uint64_t key_of(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

struct HeapEntry {
  int64_t count;
  uint64_t key;
};

// Max-heap order: higher count first; on equal counts the smaller (left id, right id) first.
struct HeapLess {
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    if (a.count != b.count) return a.count < b.count;
    return a.key > b.key;
  }
};

// Counts below this are not merged: a pair seen once compresses nothing worth a vocabulary entry.
constexpr int64_t kMinPairCount = 2;

}  // namespace

BpeTokenizer BpeTokenizer::train(std::string_view corpus, int32_t vocab_size, std::vector<std::string> special_tokens) {
  const auto num_special = static_cast<int32_t>(special_tokens.size());
  GTPO_CHECK(vocab_size >= num_special + 256, "BpeTokenizer::train: vocab_size ", vocab_size,
             " is below 256 bytes + ", num_special, " special tokens");
  std::unordered_set<std::string> special_set;
  for (const std::string& s : special_tokens) {
    GTPO_CHECK(!s.empty(), "BpeTokenizer::train: a special token is empty");
    GTPO_CHECK(utf8_valid(s), "BpeTokenizer::train: special token '", escape_for_log(s), "' is not valid UTF-8");
    GTPO_CHECK(special_set.insert(s).second, "BpeTokenizer::train: special token '", s, "' is repeated");
  }

  std::vector<std::string> bytes = special_tokens;
  std::vector<TokenOrigin> origin(num_special, TokenOrigin::kSpecial);
  std::unordered_map<std::string, int32_t> id_of_bytes;
  for (int b = 0; b < 256; ++b) {
    id_of_bytes.emplace(std::string(1, static_cast<char>(b)), static_cast<int32_t>(bytes.size()));
    bytes.emplace_back(1, static_cast<char>(b));
    origin.push_back(TokenOrigin::kModel);
  }

  // Distinct chunks in sorted order, so word indices (and everything after) do not depend on hashing.
  std::vector<std::pair<std::string_view, int64_t>> word_counts;
  {
    std::unordered_map<std::string_view, int64_t> counts;
    for (std::string_view chunk : pretokenize(corpus)) {
      if (chunk.size() > 1) ++counts[chunk];  // one-byte chunks hold no pair
    }
    word_counts.assign(counts.begin(), counts.end());
    std::sort(word_counts.begin(), word_counts.end());
  }
  std::vector<std::vector<int32_t>> words(word_counts.size());
  std::vector<int64_t> freq(word_counts.size());
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<int32_t>> pair_words;  // may hold stale or repeated indices
  for (std::size_t w = 0; w < word_counts.size(); ++w) {
    freq[w] = word_counts[w].second;
    for (char c : word_counts[w].first) words[w].push_back(num_special + static_cast<uint8_t>(c));
    for (std::size_t i = 0; i + 1 < words[w].size(); ++i) {
      const uint64_t key = key_of(words[w][i], words[w][i + 1]);
      pair_count[key] += freq[w];
      pair_words[key].push_back(static_cast<int32_t>(w));
    }
  }
  // Every pair with a positive count has a heap entry whose count is >= its current count; an entry whose
  // count is stale is re-pushed with the current one when it reaches the top.
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapLess> heap;
  for (const auto& [key, count] : pair_count) heap.push({count, key});

  std::vector<std::pair<int32_t, int32_t>> merges;
  std::unordered_map<uint64_t, int64_t> delta;
  std::vector<int32_t> merged_word;
  while (static_cast<int32_t>(bytes.size()) < vocab_size && !heap.empty()) {
    const HeapEntry top = heap.top();
    heap.pop();
    const auto found = pair_count.find(top.key);
    const int64_t current = found == pair_count.end() ? 0 : found->second;
    if (current != top.count) {
      if (current > 0) heap.push({current, top.key});
      continue;
    }
    if (current < kMinPairCount) break;
    const auto left = static_cast<int32_t>(top.key >> 32);
    const auto right = static_cast<int32_t>(top.key & 0xFFFFFFFFu);
    std::string merged = bytes[left] + bytes[right];
    // A token whose file text equals a special token's would clash with it in tokenizer.json; never learn it.
    if (special_set.count(bytes_to_byte_level(merged))) continue;

    int32_t new_id = 0;
    if (auto it = id_of_bytes.find(merged); it != id_of_bytes.end()) {
      new_id = it->second;  // another merge already produced these bytes
    } else {
      new_id = static_cast<int32_t>(bytes.size());
      id_of_bytes.emplace(merged, new_id);
      bytes.push_back(std::move(merged));
      origin.push_back(TokenOrigin::kModel);
    }
    merges.emplace_back(left, right);

    std::vector<int32_t> affected = std::move(pair_words[top.key]);
    pair_words.erase(top.key);
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
    delta.clear();
    for (int32_t w : affected) {
      std::vector<int32_t>& word = words[w];
      merged_word.clear();
      bool changed = false;
      for (std::size_t i = 0; i < word.size(); ++i) {
        if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
          merged_word.push_back(new_id);
          ++i;
          changed = true;
        } else {
          merged_word.push_back(word[i]);
        }
      }
      if (!changed) continue;
      for (std::size_t i = 0; i + 1 < word.size(); ++i) delta[key_of(word[i], word[i + 1])] -= freq[w];
      for (std::size_t i = 0; i + 1 < merged_word.size(); ++i) {
        const uint64_t key = key_of(merged_word[i], merged_word[i + 1]);
        delta[key] += freq[w];
        if (merged_word[i] == new_id || merged_word[i + 1] == new_id) pair_words[key].push_back(w);
      }
      word.swap(merged_word);
    }
    // Apply in key order so the heap's insertion sequence is deterministic too.
    std::vector<std::pair<uint64_t, int64_t>> changes(delta.begin(), delta.end());
    std::sort(changes.begin(), changes.end());
    for (const auto& [key, d] : changes) {
      if (d == 0) continue;
      int64_t& count = pair_count[key];
      count += d;
      if (d > 0) heap.push({count, key});
      if (count == 0) pair_count.erase(key);
    }
  }
  return BpeTokenizer(std::move(bytes), std::move(origin), std::move(merges), false, "BpeTokenizer::train: ");
}

}  // namespace gtpo::data
