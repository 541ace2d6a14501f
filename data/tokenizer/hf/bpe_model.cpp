#include "data/tokenizer/hf/bpe_model.h"

#include <cstdio>
#include <queue>

#include "data/tokenizer/utf8.h"

namespace gtpo::data::hf {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

std::string optional_string(const HfJson& obj, const char* key, const JsonPlace& at) {
  const HfJson* v = optional_field(obj, key);
  if (!v) return "";
  if (!v->is_string()) json_fail(at, "'", key, "' must be a string or null, found ", v->dump());
  return v->get<std::string>();
}

}  // namespace

BpeModel::BpeModel(const HfJson& model, const JsonPlace& at) {
  reject_unknown_keys(model,
                      {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                       "byte_fallback", "ignore_merges", "vocab", "merges"},
                      at);
  if (const HfJson* d = optional_field(model, "dropout")) {
    if (!d->is_number() || d->get<double>() != 0.0) json_fail(at, "BPE dropout ", d->dump(), " is not supported");
  }
  fuse_unk_ = optional_bool(model, "fuse_unk", false, at);
  byte_fallback_ = optional_bool(model, "byte_fallback", false, at);
  ignore_merges_ = optional_bool(model, "ignore_merges", false, at);
  prefix_ = optional_string(model, "continuing_subword_prefix", at);
  suffix_ = optional_string(model, "end_of_word_suffix", at);

  read_vocab(required_field(model, "vocab", at), at);

  if (const HfJson* unk = optional_field(model, "unk_token")) {
    if (!unk->is_string()) json_fail(at, "'unk_token' must be a string or null");
    unk_id_ = id_of(unk->get<std::string>());
    // tokenizers only fails when the unknown token is needed; gtpo refuses the file up front.
    if (unk_id_ < 0) json_fail(at, "'unk_token' '", unk->get<std::string>(), "' is not in 'vocab'");
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_tokens_[b] = id_of(name);
  }

  read_merges(required_field(model, "merges", at), at);
}

// 'merges' in rank order, as "a b" strings or ["a", "b"] pairs; each part and the merged token must be in
// 'vocab'.
void BpeModel::read_merges(const HfJson& merges, const JsonPlace& at) {
  if (!merges.is_array()) json_fail(at, "'merges' must be an array, found ", merges.type_name());
  merges_.reserve(merges.size() * 2);
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const HfJson& m = merges[rank];
    std::string_view parts[2];
    std::string joined;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        json_fail(at, "merge ", rank, " '", s, "' must be two tokens separated by one space");
      }
      parts[0] = std::string_view(s).substr(0, space);
      parts[1] = std::string_view(s).substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      parts[0] = m[0].get_ref<const std::string&>();
      parts[1] = m[1].get_ref<const std::string&>();
    } else {
      json_fail(at, "merge ", rank, " must be a string \"a b\" or a pair [\"a\", \"b\"], found ", m.dump());
    }
    int32_t ids[2];
    for (int k = 0; k < 2; ++k) {
      ids[k] = id_of(parts[k]);
      if (ids[k] < 0) json_fail(at, "merge ", rank, " references unknown token '", parts[k], "'");
    }
    std::string_view right = parts[1];
    if (!prefix_.empty() && right.substr(0, prefix_.size()) == prefix_) right.remove_prefix(prefix_.size());
    joined.assign(parts[0]);
    joined.append(right);
    const int32_t new_id = id_of(joined);
    if (new_id < 0) json_fail(at, "merge ", rank, " produces '", joined, "', which is not in 'vocab'");
    // A repeated pair takes its last rank, as tokenizers' HashMap collect does.
    merges_[pair_key(ids[0], ids[1])] = {static_cast<int32_t>(rank), new_id};
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (int32_t id = id_of(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  struct Symbol {
    int32_t id, prev, next;
  };
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  auto add = [&](int32_t id) {
    const auto n = static_cast<int32_t>(sym.size());
    if (n > 0) sym[n - 1].next = n;
    sym.push_back({id, n - 1, -1});
  };
  int32_t pending_unk = -1;  // fuse_unk: consecutive unknown characters become one <unk>
  std::string piece;
  std::size_t pos = 0;
  while (pos < word.size()) {
    const std::size_t start = pos;
    char32_t cp = 0;
    if (!utf8_next(word, pos, cp)) pos = start + 1;  // an invalid byte is a symbol of its own
    piece.assign(word.substr(start, pos - start));
    if (start > 0 && !prefix_.empty()) piece.insert(0, prefix_);
    if (pos == word.size()) piece += suffix_;
    if (int32_t id = id_of(piece); id >= 0) {
      if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
      add(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_tokens_[b] >= 0;
      if (all) {
        if (pending_unk >= 0) add(pending_unk), pending_unk = -1;
        for (unsigned char b : piece) add(byte_tokens_[b]);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk >= 0 && !fuse_unk_) add(pending_unk);
      pending_unk = unk_id_;
    }
    // No unk token: tokenizers drops the character.
  }
  if (pending_unk >= 0) add(pending_unk);
  if (sym.empty()) return;

  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t p) {
    if (p < 0 || sym[p].next < 0) return;
    auto it = merges_.find(pair_key(sym[p].id, sym[sym[p].next].id));
    if (it != merges_.end()) queue.push({it->second.first, p, it->second.second});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& s = sym[top.pos];
    if (s.id < 0 || s.next < 0) continue;
    const int32_t next = s.next;
    auto it = merges_.find(pair_key(s.id, sym[next].id));
    if (it == merges_.end() || it->second.second != top.new_id) continue;  // stale entry
    s.id = top.new_id;
    s.next = sym[next].next;
    if (s.next >= 0) sym[s.next].prev = top.pos;
    sym[next].id = -1;
    consider(s.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace gtpo::data::hf
