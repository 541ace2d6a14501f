#include "data/tokenizer/char_tokenizer.h"

#include <algorithm>

#include "data/tokenizer/utf8.h"
#include "data/tokenizer/vocab_table.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

// Isolates every character: "." in Oniguruma (HF's regex engine) skips newlines, [\s\S] does not.
constexpr const char* kSplitEveryCharacter = "[\\s\\S]";

Json layout_pre_tokenizer() {
  return {{"type", "Split"},
          {"pattern", {{"Regex", kSplitEveryCharacter}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}
Json layout_decoder() { return {{"type", "Fuse"}}; }

bool one_code_point(const std::string& text) {
  std::size_t pos = 0;
  char32_t cp = 0;
  return utf8_next(text, pos, cp) && pos == text.size();
}

}  // namespace

bool CharTokenizer::has_char_layout(const nlohmann::json& root) {
  const auto field = [&](const char* key) { return root.contains(key) ? root[key] : nlohmann::json(); };
  if (!field("normalizer").is_null() || !field("post_processor").is_null() ||
      field("pre_tokenizer") != nlohmann::json(layout_pre_tokenizer()) ||
      field("decoder") != nlohmann::json(layout_decoder())) {
    return false;
  }
  std::vector<std::string> added;
  for (const auto& a : field("added_tokens")) {
    if (a.is_object() && a.contains("content") && a["content"].is_string()) added.push_back(a["content"]);
  }
  const nlohmann::json vocab =
      field("model").is_object() ? field("model").value("vocab", nlohmann::json()) : nullptr;
  if (!vocab.is_object()) return false;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!one_code_point(it.key()) && std::find(added.begin(), added.end(), it.key()) == added.end())
      return false;
  }
  return true;
}

CharTokenizer::CharTokenizer(std::string_view alphabet) {
  GTPO_CHECK(!alphabet.empty(), "CharTokenizer: the alphabet is empty");
  for (const char* name : {"<pad>", "<bos>", "<eos>"}) {
    text_.push_back(name);
    added_.push_back(2);
  }
  roles_ = SpecialRoles{1, 2, 0};
  std::size_t pos = 0;
  while (pos < alphabet.size()) {
    const std::size_t start = pos;
    char32_t cp = 0;
    GTPO_CHECK(utf8_next(alphabet, pos, cp), "CharTokenizer: the alphabet is not valid UTF-8 at byte offset ", start);
    const std::string ch(alphabet.substr(start, pos - start));
    GTPO_CHECK(ids_.emplace(cp, static_cast<int32_t>(text_.size())).second, "CharTokenizer: the alphabet repeats '",
               escape_for_log(ch), "' (", code_point_name(cp), ")");
    text_.push_back(ch);
    added_.push_back(0);
  }
}

std::unique_ptr<CharTokenizer> CharTokenizer::from_json(const Json& root, const std::string& path) {
  const Json& model = require_object(root, "model", "", path);
  const std::string type = require_string(model, "type", "model", path);
  GTPO_CHECK(type == "WordLevel", file_context(path), "a character tokenizer needs model type 'WordLevel', found '",
             type, "'");
  const std::vector<AddedToken> added = parse_added_tokens(root, path);
  VocabTable table = build_vocab_table(require_object(model, "vocab", "model", path), added, path);

  std::unique_ptr<CharTokenizer> tok(new CharTokenizer());
  for (std::size_t id = 0; id < table.text.size(); ++id) {
    const std::string& text = table.text[id];
    if (table.origin[id] == TokenOrigin::kModel) {
      std::size_t pos = 0;
      char32_t cp = 0;
      GTPO_CHECK(utf8_next(text, pos, cp) && pos == text.size(), file_context(path), "'model.vocab' entry '",
                 escape_for_log(text), "' (id ", id, ") is not a single character");
      GTPO_CHECK(tok->ids_.emplace(cp, static_cast<int32_t>(id)).second, file_context(path), "character '",
                 escape_for_log(text), "' appears twice");
    }
    tok->added_.push_back(table.origin[id] == TokenOrigin::kModel ? 0 : table.origin[id] == TokenOrigin::kAdded ? 1 : 2);
  }
  tok->text_ = std::move(table.text);
  tok->roles_ = find_special_roles(added);
  return tok;
}

Json CharTokenizer::to_json() const {
  Json added = Json::array();
  Json vocab = Json::object();
  for (std::size_t id = 0; id < text_.size(); ++id) {
    vocab[text_[id]] = id;
    if (added_[id] != 0) added.push_back(added_token_json(static_cast<int32_t>(id), text_[id], added_[id] == 2));
  }
  // The decoder concatenates tokens (HF's default decoder would join them with spaces). HF's WordLevel
  // requires an unk_token; "<unk>" is not in the vocabulary, so HF errors on unknown characters just as
  // encode() does.
  return own_tokenizer_json(std::move(added), layout_pre_tokenizer(), layout_decoder(),
                            {{"type", "WordLevel"}, {"vocab", std::move(vocab)}, {"unk_token", "<unk>"}});
}

std::vector<int32_t> CharTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  std::size_t pos = 0;
  std::size_t index = 0;
  while (pos < text.size()) {
    const std::size_t start = pos;
    char32_t cp = 0;
    if (!utf8_next(text, pos, cp)) {
      fail("CharTokenizer: invalid UTF-8 byte 0x", std::hex, static_cast<unsigned>(static_cast<uint8_t>(text[start])),
           std::dec, " at byte offset ", start);
    }
    auto it = ids_.find(cp);
    if (it == ids_.end()) {
      fail("CharTokenizer: character '", escape_for_log(text.substr(start, pos - start)), "' (", code_point_name(cp),
           ") at byte offset ", start, " (character ", index, ") is not in the vocabulary");
    }
    ids.push_back(it->second);
    ++index;
  }
  return ids;
}

void CharTokenizer::check_id(int32_t id) const {
  GTPO_CHECK(id >= 0 && id < vocab_size(), "CharTokenizer: token id ", id, " is out of range for vocabulary size ",
             vocab_size());
}

std::string CharTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    check_id(id);
    out += text_[id];
  }
  return out;
}

bool CharTokenizer::is_special(int32_t id) const {
  check_id(id);
  return added_[id] == 2;
}

std::string CharTokenizer::token_text(int32_t id) const {
  check_id(id);
  return escape_for_log(text_[id]);
}

std::string CharTokenizer::token_string(int32_t id) const {
  check_id(id);
  return text_[id];
}

int32_t CharTokenizer::token_id(std::string_view token) const {
  for (std::size_t id = 0; id < text_.size(); ++id) {
    if (added_[id] != 0 && text_[id] == token) return static_cast<int32_t>(id);
  }
  for (std::size_t id = 0; id < text_.size(); ++id) {
    if (text_[id] == token) return static_cast<int32_t>(id);
  }
  return -1;
}

std::vector<int32_t> CharTokenizer::encode_added(std::string_view text) const {
  std::vector<std::pair<int32_t, std::string>> added;
  for (std::size_t id = 0; id < text_.size(); ++id) {
    if (added_[id] != 0) added.emplace_back(static_cast<int32_t>(id), text_[id]);
  }
  return encode_with_plain_added_tokens(text, added, [&](std::string_view part, std::vector<int32_t>& out) {
    const std::vector<int32_t> ids = encode(part);
    out.insert(out.end(), ids.begin(), ids.end());
  });
}

void CharTokenizer::save(const std::string& path) const { write_file_atomic(path, to_json().dump(2) + "\n"); }

}  // namespace gtpo::data
