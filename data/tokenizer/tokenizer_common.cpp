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
  config_ = config;
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
