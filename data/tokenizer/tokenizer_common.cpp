// The parts of the Tokenizer interface shared by every kind.
#include <algorithm>

#include "data/tokenizer/tokenizer.h"
#include "runtime/error.h"

namespace gtpo::data {

std::string Tokenizer::decode_skipping_special(std::span<const int32_t> ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    if (!is_special(id)) kept.push_back(id);
  }
  return decode(kept);
}

void Tokenizer::apply_config(const TokenizerConfig& config, const std::string& label) {
  auto resolve = [&](const std::optional<std::string>& content, const char* key, int32_t& role) {
    if (!content) return;
    if (content->empty()) {
      role = -1;
      return;
    }
    const int32_t id = token_id(*content);
    GTPO_CHECK(id >= 0, "tokenizer config '", label, "': '", key, "' names '", *content,
               "', which is not in the vocabulary");
    role = id;
  };
  resolve(config.bos_token, "bos_token", roles_.bos);
  resolve(config.eos_token, "eos_token", roles_.eos);
  resolve(config.pad_token, "pad_token", roles_.pad);
  class_tokens_ = class_special_tokens(config);
  if (class_tokens_) {  // transformers raises at load too ("add_bos_token = True but bos_token = None")
    GTPO_CHECK(!class_tokens_->add_bos || roles_.bos >= 0, "tokenizer config '", label, "': tokenizer class ",
               class_tokens_->fast_class,
               " adds a BOS token (add_bos_token true), but the tokenizer has no bos_token");
    GTPO_CHECK(!class_tokens_->add_eos || roles_.eos >= 0, "tokenizer config '", label, "': tokenizer class ",
               class_tokens_->fast_class,
               " adds an EOS token (add_eos_token true), but the tokenizer has no eos_token");
  }
  config_ = config;
}

std::vector<int32_t> Tokenizer::encode_hf(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids = encode_added(text);
  if (!add_special_tokens) return ids;
  if (!class_tokens_) return post_process(std::move(ids));
  if (class_tokens_->add_bos) ids.insert(ids.begin(), roles_.bos);
  if (class_tokens_->add_eos) ids.push_back(roles_.eos);
  return ids;
}

std::vector<int32_t> encode_with_plain_added_tokens(
    std::string_view text, const std::vector<std::pair<int32_t, std::string>>& added,
    const std::function<void(std::string_view, std::vector<int32_t>&)>& encode_text) {
  std::vector<int32_t> ids;
  std::size_t done = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    int best = -1;
    for (std::size_t k = 0; k < added.size(); ++k) {
      const std::string& c = added[k].second;
      if (!c.empty() && text.compare(pos, c.size(), c) == 0 &&
          (best < 0 || c.size() > added[best].second.size())) {
        best = static_cast<int>(k);
      }
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    if (pos > done) encode_text(text.substr(done, pos - done), ids);
    ids.push_back(added[best].first);
    pos += added[best].second.size();
    done = pos;
  }
  if (done < text.size()) encode_text(text.substr(done), ids);
  return ids;
}

}  // namespace gtpo::data
