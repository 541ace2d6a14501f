#include "data/tokenizer/bpe_tokenizer.h"

#include <queue>
#include <tuple>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/pretokenizer.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string hex_byte(int b) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[(b >> 4) & 15] + digits[b & 15];
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::vector<std::string> bytes, std::vector<TokenOrigin> origin,
                           std::vector<std::pair<int32_t, int32_t>> merges, bool ignore_merges,
                           const std::string& context)
    : bytes_(std::move(bytes)), origin_(std::move(origin)), ignore_merges_(ignore_merges) {
  byte_id_.fill(-1);
  std::vector<AddedToken> added;
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    if (origin_[id] != TokenOrigin::kModel) {
      added.push_back(AddedToken{static_cast<int32_t>(id), bytes_[id], origin_[id] == TokenOrigin::kSpecial});
      continue;
    }
    GTPO_CHECK(!bytes_[id].empty(), context, "token id ", id, " is empty");
    model_id_.emplace(bytes_[id], static_cast<int32_t>(id));
    if (bytes_[id].size() == 1) {
      const auto b = static_cast<uint8_t>(bytes_[id][0]);
      if (byte_id_[b] < 0) byte_id_[b] = static_cast<int32_t>(id);
    }
  }
  for (int b = 0; b < 256; ++b) {
    GTPO_CHECK(byte_id_[b] >= 0, context, "byte ", hex_byte(b),
               " has no token; a byte-level BPE vocabulary needs all 256 bytes");
  }
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = merges[rank];
    GTPO_CHECK(left >= 0 && right >= 0 && left < static_cast<int32_t>(bytes_.size()) &&
                   right < static_cast<int32_t>(bytes_.size()) && origin_[left] == TokenOrigin::kModel &&
                   origin_[right] == TokenOrigin::kModel,
               context, "merge ", rank, " (", left, ", ", right, ") does not join two vocabulary tokens");
    auto it = model_id_.find(bytes_[left] + bytes_[right]);
    GTPO_CHECK(it != model_id_.end(), context, "merge ", rank, " ('", bytes_to_byte_level(bytes_[left]), "' + '",
               bytes_to_byte_level(bytes_[right]), "') produces a token that is not in the vocabulary");
    // A repeated pair keeps its first (lowest) rank, as in Hugging Face.
    if (merge_of_.emplace(pair_key(left, right), std::make_pair(static_cast<int32_t>(rank), it->second)).second) {
      merges_.emplace_back(left, right);
    }
  }
  roles_ = find_special_roles(added);
  // The byte tokenizer is the merge-free BPE whose only model tokens are ids 0..255, the bytes in order.
  bool bytes_first = merges_.empty() && model_id_.size() == 256 && bytes_.size() >= 256;
  for (int b = 0; bytes_first && b < 256; ++b) bytes_first = byte_id_[b] == b;
  kind_ = bytes_first ? "byte" : "bpe";
}

Json BpeTokenizer::to_json() const {
  Json added = Json::array();
  Json vocab = Json::object();
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    const bool is_model = origin_[id] == TokenOrigin::kModel;
    // Added tokens are in the model vocabulary too (as HF's trainer writes them): HF takes an added token's
    // id from the model vocabulary and would otherwise renumber it after the last model token.
    std::string key = is_model ? bytes_to_byte_level(bytes_[id]) : bytes_[id];
    GTPO_CHECK(!vocab.contains(key), "BpeTokenizer::save: token ", id, " '", escape_for_log(key),
               "' has the same file text as token ", vocab[key].get<int32_t>());
    vocab[key] = id;
    if (!is_model) added.push_back(added_token_json(static_cast<int32_t>(id), bytes_[id], origin_[id] == TokenOrigin::kSpecial));
  }
  Json merges = Json::array();
  for (const auto& [left, right] : merges_) {
    merges.push_back(bytes_to_byte_level(bytes_[left]) + " " + bytes_to_byte_level(bytes_[right]));
  }
  Json model = Json::object();
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] = nullptr;
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = false;
  model["byte_fallback"] = false;
  if (ignore_merges_) model["ignore_merges"] = true;  // omitted when false: older HF versions lack the key
  model["vocab"] = std::move(vocab);
  model["merges"] = std::move(merges);

  Json root = Json::object();
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = std::move(added);
  root["normalizer"] = nullptr;
  root["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  root["post_processor"] = nullptr;
  root["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  root["model"] = std::move(model);
  return root;
}

void BpeTokenizer::encode_chunk(std::string_view chunk, std::vector<int32_t>& out) const {
  if (chunk.size() == 1) {
    out.push_back(byte_id_[static_cast<uint8_t>(chunk[0])]);
    return;
  }
  if (ignore_merges_) {
    if (auto it = model_id_.find(std::string(chunk)); it != model_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id, prev, next;
  };
  const auto n = static_cast<int32_t>(chunk.size());
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i) sym[i] = {byte_id_[static_cast<uint8_t>(chunk[i])], i - 1, i + 1 < n ? i + 1 : -1};
  // Candidate merges as (rank, position of the left symbol); stale entries are skipped when popped.
  using Candidate = std::pair<int32_t, int32_t>;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    auto it = merge_of_.find(pair_key(sym[pos].id, sym[sym[pos].next].id));
    if (it != merge_of_.end()) queue.emplace(it->second.first, pos);
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const auto [rank, pos] = queue.top();
    queue.pop();
    if (sym[pos].id < 0 || sym[pos].next < 0) continue;
    const int32_t next = sym[pos].next;
    auto it = merge_of_.find(pair_key(sym[pos].id, sym[next].id));
    if (it == merge_of_.end() || it->second.first != rank) continue;  // the pair changed since it was queued
    sym[pos].id = it->second.second;
    sym[pos].next = sym[next].next;
    if (sym[next].next >= 0) sym[sym[next].next].prev = pos;
    sym[next].id = -1;
    consider(sym[pos].prev);
    consider(pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 2 + 1);
  if (merges_.empty() && !ignore_merges_) {
    // Without merges the split cannot change the result: one token per byte.
    for (char c : text) ids.push_back(byte_id_[static_cast<uint8_t>(c)]);
    return ids;
  }
  for (std::string_view chunk : pretokenize(text)) encode_chunk(chunk, ids);
  return ids;
}

void BpeTokenizer::check_id(int32_t id) const {
  GTPO_CHECK(id >= 0 && id < vocab_size(), "BpeTokenizer (", kind_, "): token id ", id,
             " is out of range for vocabulary size ", vocab_size());
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(id);
    out += bytes_[id];
  }
  return out;
}

bool BpeTokenizer::is_special(int32_t id) const {
  check_id(id);
  return origin_[id] == TokenOrigin::kSpecial;
}

std::string BpeTokenizer::token_text(int32_t id) const {
  check_id(id);
  return escape_for_log(bytes_[id]);
}

std::string BpeTokenizer::token_string(int32_t id) const {
  check_id(id);
  return origin_[id] == TokenOrigin::kModel ? bytes_to_byte_level(bytes_[id]) : bytes_[id];
}

int32_t BpeTokenizer::token_id(std::string_view token) const {
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    if (origin_[id] != TokenOrigin::kModel && bytes_[id] == token) return static_cast<int32_t>(id);
  }
  std::string bytes;
  if (!byte_level_to_bytes(token, bytes)) return -1;
  auto it = model_id_.find(bytes);
  return it == model_id_.end() ? -1 : it->second;
}

std::vector<int32_t> BpeTokenizer::encode_added(std::string_view text) const {
  std::vector<std::pair<int32_t, std::string>> added;
  for (std::size_t id = 0; id < bytes_.size(); ++id) {
    if (origin_[id] != TokenOrigin::kModel) added.emplace_back(static_cast<int32_t>(id), bytes_[id]);
  }
  return encode_with_plain_added_tokens(text, added, [&](std::string_view part, std::vector<int32_t>& out) {
    const std::vector<int32_t> ids = encode(part);
    out.insert(out.end(), ids.begin(), ids.end());
  });
}

void BpeTokenizer::save(const std::string& path) const { write_file_atomic(path, to_json().dump(2) + "\n"); }

}  // namespace gtpo::data
