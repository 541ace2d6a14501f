#include "data/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/hf/unicode_text.h"
#include "data/tokenizer/special_tokens.h"
#include "data/tokenizer/tokenizer_file.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

using hf::HfJson;
using hf::JsonPlace;

// Code point ending at `end` (exclusive) in s, or false when none/invalid.
bool last_code_point(std::string_view s, char32_t& cp) {
  if (s.empty()) return false;
  std::size_t start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 && s.size() - start < 4) --start;
  std::size_t pos = start;
  return utf8_next(s, pos, cp) && pos == s.size();
}

bool first_code_point(std::string_view s, char32_t& cp) {
  std::size_t pos = 0;
  return utf8_next(s, pos, cp);
}

// Start of the trailing white-space run of s (tokenizers' space_leftmost_at_end).
std::size_t trailing_space_start(std::string_view s) {
  std::size_t end = s.size();
  char32_t cp = 0;
  while (end > 0 && last_code_point(s.substr(0, end), cp) && hf::is_white_space(cp)) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    end = start;
  }
  return end;
}

// Length of the leading white-space run of s (space_rightmost_at_start).
std::size_t leading_space_length(std::string_view s) {
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t next = pos;
    char32_t cp = 0;
    if (!utf8_next(s, next, cp) || !hf::is_white_space(cp)) break;
    pos = next;
  }
  return pos;
}

}  // namespace

// added_tokens: each on its file id, beside the model tokens (same text where both give one).
void HfTokenizer::read_added_tokens(const HfJson& added, const JsonPlace& where) {
  if (!added.is_null() && !added.is_array()) json_fail(where, "must be an array");
  for (std::size_t i = 0; i < added.size(); ++i) {
    const JsonPlace at = where.index(i);
    const HfJson& e = added[i];
    if (!e.is_object()) json_fail(at, "expected an object");
    const HfJson& id_json = hf::required_field(e, "id", at);
    if (!id_json.is_number_unsigned() || id_json.get<uint64_t>() >= (uint64_t{1} << 24)) {
      json_fail(at, "'id' must be a non-negative integer below 2^24, found ", id_json.dump());
    }
    Added a;
    a.id = id_json.get<int32_t>();
    a.content = hf::required_string(e, "content", at);
    if (a.content.empty()) json_fail(at, "empty 'content'");
    a.single_word = hf::optional_bool(e, "single_word", false, at);
    a.lstrip = hf::optional_bool(e, "lstrip", false, at);
    a.rstrip = hf::optional_bool(e, "rstrip", false, at);
    a.special = hf::optional_bool(e, "special", false, at);
    a.normalized = hf::optional_bool(e, "normalized", !a.special, at);
    a.match = a.normalized && normalizer_ ? normalizer_->apply(a.content) : a.content;
    const auto id = static_cast<std::size_t>(a.id);
    if (id >= tokens_.size()) tokens_.resize(id + 1);
    const std::string& model_text = id < model_->tokens().size() ? model_->tokens()[id] : std::string();
    if (!model_text.empty() && model_text != a.content) {
      json_fail(at, "added token '", a.content, "' has id ", a.id, ", which 'model.vocab' gives to '",
                escape_for_log(model_text), "'");
    }
    if (model_text.empty() && !tokens_[id].empty()) json_fail(at, "id ", a.id, " is used twice");
    tokens_[id] = a.content;
    (a.normalized ? normalized_set_ : raw_set_).push_back(static_cast<int>(added_.size()));
    added_.push_back(std::move(a));
  }
}

std::unique_ptr<HfTokenizer> HfTokenizer::from_json(const HfJson& root, std::string text, const std::string& path) {
  const JsonPlace top{path, ""};
  if (!root.is_object()) json_fail(top, "expected a JSON object, found ", root.type_name());
  std::unique_ptr<HfTokenizer> tok(new HfTokenizer());
  tok->original_ = std::move(text);
  for (auto it = root.begin(); it != root.end(); ++it) {
    static const char* known[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
                                  "pre_tokenizer", "post_processor", "decoder", "model"};
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; }) ==
        std::end(known)) {
      json_fail(top, "unsupported top-level key '", it.key(), "'");
    }
  }
  // Truncation and padding change what encode returns in tokenizers; gtpo does neither.
  for (const char* key : {"truncation", "padding"}) {
    if (hf::optional_field(root, key)) json_fail(top.child(key), "must be null (gtpo does not truncate or pad)");
  }
  const HfJson& model = hf::required_field(root, "model", top);
  tok->model_ = hf::parse_model(model, top.child("model"));
  static const HfJson null_json;
  auto field = [&](const char* key) -> const HfJson& {
    const HfJson* v = hf::optional_field(root, key);
    return v ? *v : null_json;
  };
  tok->normalizer_ = hf::parse_normalizer(field("normalizer"), top.child("normalizer"));
  tok->pre_tokenizer_ = hf::parse_pre_tokenizer(field("pre_tokenizer"), top.child("pre_tokenizer"));
  tok->post_processor_ = hf::parse_post_processor(field("post_processor"), top.child("post_processor"));
  tok->decoder_ = hf::parse_decoder(field("decoder"), top.child("decoder"));

  // Vocabulary: model tokens, then added tokens on their file ids.
  tok->tokens_ = tok->model_->tokens();
  tok->read_added_tokens(field("added_tokens"), top.child("added_tokens"));
  if (tok->tokens_.empty()) json_fail(top, "the vocabulary is empty");
  for (std::size_t id = 0; id < tok->tokens_.size(); ++id) {
    if (tok->tokens_[id].empty()) json_fail(top, "token ids must be contiguous from 0: id ", id, " has no token");
  }
  tok->added_index_.assign(tok->tokens_.size(), -1);
  std::vector<AddedToken> roles_source;
  for (std::size_t k = 0; k < tok->added_.size(); ++k) {
    tok->added_index_[tok->added_[k].id] = static_cast<int32_t>(k);
    roles_source.push_back({tok->added_[k].id, tok->added_[k].content, tok->added_[k].special});
  }
  tok->roles_ = find_special_roles(roles_source);

  // kind "byte": gtpo's byte tokenizer layout (ids 0..255 are the bytes in order, no merges).
  bool bytes_first = tok->model_->tokens().size() >= 256 && model.contains("merges") && model["merges"].empty();
  std::string bytes;
  for (int b = 0; bytes_first && b < 256; ++b) {
    bytes_first = byte_level_to_bytes(tok->tokens_[b], bytes) && bytes.size() == 1 &&
                  static_cast<unsigned char>(bytes[0]) == b;
  }
  for (std::size_t id = 256; bytes_first && id < tok->tokens_.size(); ++id) bytes_first = tok->added_index_[id] >= 0;
  tok->kind_ = model["type"] == "WordLevel" ? "wordlevel" : bytes_first ? "byte" : "bpe";
  return tok;
}

void HfTokenizer::split_added(const std::string& text, bool at_start, const std::vector<int>& set,
                              std::vector<hf::Piece>& out) const {
  auto push_text = [&](std::size_t s, std::size_t e) {
    if (e > s) out.push_back({text.substr(s, e - s), at_start && s == 0, -1});
  };
  if (set.empty()) {
    push_text(0, text.size());
    return;
  }
  std::size_t start_offset = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // Leftmost-longest match at or after pos (Aho-Corasick MatchKind::LeftmostLongest).
    int best = -1;
    std::size_t at = pos;
    for (; at < text.size(); ++at) {
      for (int k : set) {
        const std::string& m = added_[k].match;
        if (m.size() <= text.size() - at && text.compare(at, m.size(), m) == 0 &&
            (best < 0 || m.size() > added_[best].match.size())) {
          best = k;
        }
      }
      if (best >= 0) break;
    }
    if (best < 0) break;
    const Added& a = added_[best];
    std::size_t start = at;
    std::size_t stop = at + a.match.size();
    pos = stop;  // the search goes on after the match itself, whatever the strip flags add
    if (a.single_word) {
      char32_t cp = 0;
      const bool start_space = start == 0 || !(last_code_point(std::string_view(text).substr(0, start), cp) &&
                                               hf::is_word_char(cp));
      const bool stop_space = stop == text.size() || !(first_code_point(std::string_view(text).substr(stop), cp) &&
                                                       hf::is_word_char(cp));
      if (!start_space || !stop_space) continue;
    }
    if (a.lstrip) start = std::max(trailing_space_start(std::string_view(text).substr(0, start)), start_offset);
    if (a.rstrip) stop += leading_space_length(std::string_view(text).substr(stop));
    start = std::max(start, start_offset);
    push_text(start_offset, start);
    out.push_back({text.substr(start, stop - start), at_start && start == 0, a.id});
    start_offset = stop;
  }
  push_text(start_offset, text.size());
}

std::vector<int32_t> HfTokenizer::run_model(std::vector<hf::Piece> pieces) const {
  if (pre_tokenizer_) pre_tokenizer_->apply(pieces);
  std::vector<int32_t> ids;
  for (const hf::Piece& p : pieces) {
    if (p.added_id >= 0) {
      ids.push_back(p.added_id);
    } else {
      model_->tokenize(p.text, ids);
    }
  }
  return ids;
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  std::string normalized(text);
  if (normalizer_) normalized = normalizer_->apply(std::move(normalized));
  std::vector<hf::Piece> pieces;
  if (!normalized.empty()) pieces.push_back({std::move(normalized), true, -1});
  return run_model(std::move(pieces));
}

std::vector<int32_t> HfTokenizer::encode_added(std::string_view text) const {
  std::vector<hf::Piece> raw;
  split_added(std::string(text), true, raw_set_, raw);
  std::vector<hf::Piece> pieces;
  for (hf::Piece& p : raw) {
    if (p.added_id >= 0) {
      pieces.push_back(std::move(p));
      continue;
    }
    std::string normalized = normalizer_ ? normalizer_->apply(std::move(p.text)) : std::move(p.text);
    split_added(normalized, p.at_start, normalized_set_, pieces);
  }
  return run_model(std::move(pieces));
}

std::vector<int32_t> HfTokenizer::post_process(std::vector<int32_t> ids) const {
  return post_processor_ ? post_processor_->process(std::move(ids)) : ids;
}

void HfTokenizer::check_id(int32_t id) const {
  GTPO_CHECK(id >= 0 && id < vocab_size(), "HfTokenizer (", kind_, "): token id ", id,
             " is out of range for vocabulary size ", vocab_size());
}

std::string HfTokenizer::decode(std::span<const int32_t> ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    check_id(id);
    tokens.push_back(tokens_[id]);
  }
  std::string out;
  if (!decoder_) {
    // tokenizers joins the tokens with spaces when there is no decoder.
    for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const std::string& t : decoder_->decode_chain(std::move(tokens))) out += t;
  return out;
}

bool HfTokenizer::is_special(int32_t id) const {
  check_id(id);
  return added_index_[id] >= 0 && added_[added_index_[id]].special;
}

std::string HfTokenizer::token_text(int32_t id) const {
  const int32_t one[] = {id};
  return escape_for_log(decode(one));
}

std::string HfTokenizer::token_string(int32_t id) const {
  check_id(id);
  return tokens_[id];
}

int32_t HfTokenizer::token_id(std::string_view token) const {
  for (const Added& a : added_) {
    if (a.content == token) return a.id;
  }
  return model_->id_of(token);
}

void HfTokenizer::save(const std::string& path) const { write_file_atomic(path, original_); }

}  // namespace gtpo::data
