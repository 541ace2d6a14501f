#include "data/tokenizer/hf/normalizer.h"

#include "data/tokenizer/hf/onig_regex.h"
#include "data/tokenizer/hf/unicode_text.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::hf {
namespace {

constexpr const char* kSupported = "NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence";

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  std::string apply(std::string text) const override { return normalize_unicode(text, form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  std::string apply(std::string text) const override { return lowercase_unicode(text); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string apply(std::string text) const override {
    std::size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        std::size_t next = begin;
        char32_t cp = 0;
        if (!utf8_next(text, next, cp) || !is_white_space(cp)) break;
        begin = next;
      }
    }
    if (right_) {
      while (end > begin) {
        std::size_t start = end - 1;
        while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        std::size_t next = start;
        char32_t cp = 0;
        if (!utf8_next(text, next, cp) || next != end || !is_white_space(cp)) break;
        end = start;
      }
    }
    return text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

// Replaces every match (literal string or regex) by `content`.
class Replace final : public Normalizer {
 public:
  Replace(std::string pattern, bool is_regex, std::string content, const JsonPlace& at)
      : literal_(std::move(pattern)), content_(std::move(content)) {
    if (is_regex) regex_ = std::make_unique<OnigRegex>(literal_, at.prefix());
    if (!is_regex && literal_.empty()) json_fail(at, "Replace with an empty pattern");
  }
  std::string apply(std::string text) const override {
    std::string out;
    if (!regex_) {
      std::size_t pos = 0;
      while (true) {
        const std::size_t hit = text.find(literal_, pos);
        if (hit == std::string::npos) break;
        out.append(text, pos, hit - pos);
        out += content_;
        pos = hit + literal_.size();
      }
      out.append(text, pos, std::string::npos);
      return out;
    }
    for_each_valid_run(text, [&](std::size_t off, std::size_t len, bool valid) {
      const std::string_view run = std::string_view(text).substr(off, len);
      if (!valid) {
        out.append(run);
        return;
      }
      std::size_t pos = 0;
      for (const auto& [s, e] : regex_->find_all(run)) {
        out.append(run.substr(pos, s - pos));
        out += content_;
        pos = e;
      }
      out.append(run.substr(pos));
    });
    return out;
  }

 private:
  std::string literal_;
  std::string content_;
  std::unique_ptr<OnigRegex> regex_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string apply(std::string text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string apply(std::string text) const override {
    for (const auto& s : steps_) text = s->apply(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const HfJson& json, const JsonPlace& at) {
  if (json.is_null()) return nullptr;
  const std::string type = component_type(json, at);
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    reject_unknown_keys(json, {}, at);
    const NormalForm form = type == "NFC" ? NormalForm::kNFC
                            : type == "NFD" ? NormalForm::kNFD
                            : type == "NFKC" ? NormalForm::kNFKC
                                             : NormalForm::kNFKD;
    return std::make_unique<UnicodeForm>(form);
  }
  if (type == "Lowercase") {
    reject_unknown_keys(json, {}, at);
    return std::make_unique<Lowercase>();
  }
  if (type == "Strip") {
    reject_unknown_keys(json, {"strip_left", "strip_right"}, at);
    return std::make_unique<Strip>(optional_bool(json, "strip_left", true, at),
                                   optional_bool(json, "strip_right", true, at));
  }
  if (type == "Replace") {
    reject_unknown_keys(json, {"pattern", "content"}, at);
    bool is_regex = false;
    std::string pattern = split_pattern(json, "pattern", at, is_regex);
    return std::make_unique<Replace>(std::move(pattern), is_regex, required_string(json, "content", at), at);
  }
  if (type == "Prepend") {
    reject_unknown_keys(json, {"prepend"}, at);
    return std::make_unique<Prepend>(required_string(json, "prepend", at));
  }
  if (type == "Sequence") {
    reject_unknown_keys(json, {"normalizers"}, at);
    return std::make_unique<Sequence>(parse_steps<Normalizer>(json, "normalizers", at, parse_normalizer));
  }
  json_fail(at, "unsupported normalizer type '", type, "' (supported: ", kSupported, ")");
}

}  // namespace gtpo::data::hf
