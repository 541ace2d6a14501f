// Hugging Face normalizers (tokenizer.json "normalizer"): NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace,
// Prepend and Sequence of these. Anything else is refused by parse_normalizer.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string apply(std::string text) const = 0;
};

// `json` null means no normalizer (returns nullptr).
std::unique_ptr<Normalizer> parse_normalizer(const HfJson& json, const JsonPlace& at);

}  // namespace gtpo::data::hf
