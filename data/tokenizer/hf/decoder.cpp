#include "data/tokenizer/hf/decoder.h"

#include <cctype>
#include <cstdio>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/hf/onig_regex.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::hf {
namespace {

constexpr const char* kSupported = "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence";

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = 0;
    if (!utf8_next(s, pos, cp)) {
      cp = 0xDC00 + static_cast<unsigned char>(s[pos]);  // a lone byte, kept apart from real characters
      ++pos;
    }
    out.push_back(cp);
  }
  return out;
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp >= 0xDC00 && cp <= 0xDCFF) {
    out += static_cast<char>(cp - 0xDC00);
  } else {
    utf8_append(out, cp);
  }
}

class ByteLevel final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string out, bytes;
    for (const std::string& t : tokens) {
      // A token with a character outside the byte-level alphabet is taken as it is (an added token).
      if (byte_level_to_bytes(t, bytes)) {
        out += bytes;
      } else {
        out += t;
      }
    }
    return {out};
  }
};

class Metaspace final : public Decoder {
 public:
  Metaspace(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"replacement", "prepend_scheme", "add_prefix_space", "split", "str_rep"}, at);
    const std::string r = required_string(json, "replacement", at);
    const auto cps = code_points(r);
    if (cps.size() != 1) json_fail(at, "'replacement' must be one character, found '", r, "'");
    replacement_ = cps[0];
    if (const HfJson* s = optional_field(json, "prepend_scheme")) {
      const std::string v = s->is_string() ? s->get<std::string>() : "";
      if (v != "always" && v != "first" && v != "never") {
        json_fail(at, "unsupported prepend_scheme ", s->dump(), " (supported: always, first, never)");
      }
      strip_first_ = v != "never";
    } else {
      strip_first_ = optional_bool(json, "add_prefix_space", true, at);
    }
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (char32_t c : code_points(tokens[i])) {
        if (c == replacement_) {
          if (i == 0 && strip_first_) continue;
          out += ' ';
        } else {
          append_code_point(out, c);
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  char32_t replacement_ = 0;
  bool strip_first_ = true;
};

class ByteFallback final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    for (std::string& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        unsigned v = 0;
        if (std::sscanf(t.c_str() + 3, "%2x", &v) == 1 && std::isxdigit(static_cast<unsigned char>(t[3])) &&
            std::isxdigit(static_cast<unsigned char>(t[4]))) {
          value = static_cast<int>(v);
        }
      }
      if (value >= 0) {
        bytes += static_cast<char>(value);
        continue;
      }
      if (!bytes.empty()) out.push_back(std::move(bytes)), bytes.clear();
      out.push_back(std::move(t));
    }
    if (!bytes.empty()) out.push_back(std::move(bytes));
    return out;
  }
};

class Fuse final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string out;
    for (const std::string& t : tokens) out += t;
    return {out};
  }
};

class Strip final : public Decoder {
 public:
  Strip(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"content", "start", "stop"}, at);
    const std::string c = required_string(json, "content", at);
    const auto cps = code_points(c);
    if (cps.size() != 1) json_fail(at, "'content' must be one character, found '", c, "'");
    content_ = cps[0];
    for (auto [key, dest] : {std::pair{"start", &start_}, std::pair{"stop", &stop_}}) {
      const HfJson& v = required_field(json, key, at);
      if (!v.is_number_unsigned()) json_fail(at, "'", key, "' must be a non-negative integer, found ", v.dump());
      *dest = v.get<std::size_t>();
    }
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      const auto cps = code_points(t);
      std::size_t begin = 0, end = cps.size();
      while (begin < end && begin < start_ && cps[begin] == content_) ++begin;
      std::size_t stripped = 0;
      while (end > begin && stripped < stop_ && cps[end - 1] == content_) --end, ++stripped;
      std::string out;
      for (std::size_t i = begin; i < end; ++i) append_code_point(out, cps[i]);
      t = std::move(out);
    }
    return tokens;
  }

 private:
  char32_t content_ = 0;
  std::size_t start_ = 0, stop_ = 0;
};

class Replace final : public Decoder {
 public:
  Replace(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"pattern", "content"}, at);
    bool is_regex = false;
    pattern_ = split_pattern(json, "pattern", at, is_regex);
    content_ = required_string(json, "content", at);
    if (is_regex) regex_ = std::make_unique<OnigRegex>(pattern_, at.prefix());
    if (!is_regex && pattern_.empty()) json_fail(at, "Replace with an empty pattern");
  }
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& t : tokens) {
      std::string out;
      std::size_t pos = 0;
      if (regex_ && utf8_valid(t)) {
        for (const auto& [s, e] : regex_->find_all(t)) {
          out.append(t, pos, s - pos);
          out += content_;
          pos = e;
        }
      } else if (!regex_) {
        for (std::size_t hit; (hit = t.find(pattern_, pos)) != std::string::npos; pos = hit + pattern_.size()) {
          out.append(t, pos, hit - pos);
          out += content_;
        }
      }
      out.append(t, pos, std::string::npos);
      t = std::move(out);
    }
    return tokens;
  }

 private:
  std::string pattern_, content_;
  std::unique_ptr<OnigRegex> regex_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& s : steps_) tokens = s->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const HfJson& json, const JsonPlace& at) {
  if (json.is_null()) return nullptr;
  const std::string type = component_type(json, at);
  if (type == "ByteLevel") {
    reject_unknown_keys(json, {"add_prefix_space", "trim_offsets", "use_regex"}, at);
    return std::make_unique<ByteLevel>();
  }
  if (type == "Metaspace") return std::make_unique<Metaspace>(json, at);
  if (type == "ByteFallback") {
    reject_unknown_keys(json, {}, at);
    return std::make_unique<ByteFallback>();
  }
  if (type == "Fuse") {
    reject_unknown_keys(json, {}, at);
    return std::make_unique<Fuse>();
  }
  if (type == "Strip") return std::make_unique<Strip>(json, at);
  if (type == "Replace") return std::make_unique<Replace>(json, at);
  if (type == "Sequence") {
    reject_unknown_keys(json, {"decoders"}, at);
    return std::make_unique<Sequence>(parse_steps<Decoder>(json, "decoders", at, parse_decoder));
  }
  json_fail(at, "unsupported decoder type '", type, "' (supported: ", kSupported, ")");
}

}  // namespace gtpo::data::hf
