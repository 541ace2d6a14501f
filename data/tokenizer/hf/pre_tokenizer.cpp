#include "data/tokenizer/hf/pre_tokenizer.h"

#include <algorithm>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/hf/onig_regex.h"
#include "data/tokenizer/hf/unicode_text.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::hf {
namespace {

constexpr const char* kSupported =
    "Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence";
// GPT-2's pattern, which ByteLevel uses when use_regex is true (tokenizers' pre_tokenizers/byte_level.rs).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Calls `fn` on every piece that has no added token, replacing it by what fn appends.
template <typename Fn>
void split_each(std::vector<Piece>& pieces, Fn&& fn) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (Piece& p : pieces) {
    if (p.added_id >= 0) {
      out.push_back(std::move(p));
    } else {
      fn(p, out);
    }
  }
  pieces = std::move(out);
}

// Matches and gaps of a regex over text (invalid UTF-8 bytes count as gaps).
std::vector<MatchRun> regex_runs(const OnigRegex& regex, const std::string& text) {
  std::vector<MatchRun> runs;
  std::size_t prev = 0;
  for_each_valid_run(text, [&](std::size_t off, std::size_t len, bool valid) {
    if (!valid) return;
    for (const auto& [s, e] : regex.find_all(std::string_view(text).substr(off, len))) {
      if (off + s != prev) runs.push_back({prev, off + s, false});
      runs.push_back({off + s, off + e, true});
      prev = off + e;
    }
  });
  if (prev != text.size()) runs.push_back({prev, text.size(), false});
  return runs;
}

std::vector<MatchRun> literal_runs(const std::string& needle, const std::string& text) {
  std::vector<MatchRun> runs;
  std::size_t prev = 0, pos = 0;
  while (!needle.empty()) {
    const std::size_t hit = text.find(needle, pos);
    if (hit == std::string::npos) break;
    if (hit != prev) runs.push_back({prev, hit, false});
    runs.push_back({hit, hit + needle.size(), true});
    prev = pos = hit + needle.size();
  }
  if (prev != text.size()) runs.push_back({prev, text.size(), false});
  return runs;
}

// Every character for which pred holds is one match (invalid bytes never match).
template <typename Pred>
std::vector<MatchRun> char_runs(const std::string& text, Pred&& pred) {
  std::vector<MatchRun> runs;
  std::size_t pos = 0, prev = 0;
  while (pos < text.size()) {
    std::size_t next = pos;
    char32_t cp = 0;
    if (!utf8_next(text, next, cp)) {
      pos += 1;
      continue;
    }
    if (pred(cp)) {
      if (pos != prev) runs.push_back({prev, pos, false});
      runs.push_back({pos, next, true});
      prev = next;
    }
    pos = next;
  }
  if (prev != text.size()) runs.push_back({prev, text.size(), false});
  return runs;
}

SplitBehavior parse_behavior(const HfJson& json, const JsonPlace& at) {
  const std::string b = required_string(json, "behavior", at);
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  json_fail(at, "unsupported behavior '", b,
            "' (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

class Split final : public PreTokenizer {
 public:
  Split(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"pattern", "behavior", "invert"}, at);
    bool is_regex = false;
    pattern_ = split_pattern(json, "pattern", at, is_regex);
    if (is_regex) {
      regex_ = std::make_unique<OnigRegex>(pattern_, at.prefix());
    } else if (pattern_.empty()) {
      json_fail(at, "Split with an empty String pattern");
    }
    behavior_ = parse_behavior(json, at);
    invert_ = optional_bool(json, "invert", false, at);
  }
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      std::vector<MatchRun> runs = regex_ ? regex_runs(*regex_, p.text) : literal_runs(pattern_, p.text);
      if (invert_) {
        for (MatchRun& r : runs) r.is_match = !r.is_match;
      }
      split_runs(p, runs, behavior_, out);
    });
  }

 private:
  std::string pattern_;
  std::unique_ptr<OnigRegex> regex_;
  SplitBehavior behavior_ = SplitBehavior::kIsolated;
  bool invert_ = false;
};

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(const HfJson& json, const JsonPlace& at) {
    // trim_offsets only moves offsets, which gtpo does not report.
    reject_unknown_keys(json, {"add_prefix_space", "trim_offsets", "use_regex"}, at);
    add_prefix_space_ = optional_bool(json, "add_prefix_space", true, at);
    if (optional_bool(json, "use_regex", true, at)) regex_ = std::make_unique<OnigRegex>(kGpt2Pattern, at.prefix());
  }
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](Piece& p, std::vector<Piece>& out) {
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' ')) p.text.insert(0, 1, ' ');
      std::vector<Piece> parts;
      if (regex_) {
        split_runs(p, regex_runs(*regex_, p.text), SplitBehavior::kIsolated, parts);
      } else if (!p.text.empty()) {
        parts.push_back(std::move(p));
      }
      for (Piece& part : parts) {
        part.text = bytes_to_byte_level(part.text);
        out.push_back(std::move(part));
      }
    });
  }

 private:
  bool add_prefix_space_ = true;
  std::unique_ptr<OnigRegex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"replacement", "prepend_scheme", "add_prefix_space", "split", "str_rep"}, at);
    replacement_ = required_string(json, "replacement", at);
    std::size_t pos = 0;
    char32_t cp = 0;
    if (!utf8_next(replacement_, pos, cp) || pos != replacement_.size()) {
      json_fail(at, "'replacement' must be one character, found '", replacement_, "'");
    }
    if (const HfJson* s = optional_field(json, "prepend_scheme")) {
      const std::string v = s->is_string() ? s->get<std::string>() : "";
      if (v == "always") scheme_ = PrependScheme::kAlways;
      else if (v == "first") scheme_ = PrependScheme::kFirst;
      else if (v == "never") scheme_ = PrependScheme::kNever;
      else json_fail(at, "unsupported prepend_scheme ", s->dump(), " (supported: always, first, never)");
    } else {
      scheme_ = optional_bool(json, "add_prefix_space", true, at) ? PrependScheme::kAlways : PrependScheme::kNever;
    }
    split_ = optional_bool(json, "split", true, at);
  }
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](Piece& p, std::vector<Piece>& out) {
      std::string text;
      text.reserve(p.text.size() + 3);
      for (char c : p.text) {
        if (c == ' ') {
          text += replacement_;
        } else {
          text += c;
        }
      }
      const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start))) {
        text.insert(0, replacement_);
      }
      p.text = std::move(text);
      if (split_) {
        split_runs(p, literal_runs(replacement_, p.text), SplitBehavior::kMergedWithNext, out);
      } else if (!p.text.empty()) {
        out.push_back(std::move(p));
      }
    });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_ = PrependScheme::kAlways;
  bool split_ = true;
};

class Digits final : public PreTokenizer {
 public:
  Digits(const HfJson& json, const JsonPlace& at) {
    reject_unknown_keys(json, {"individual_digits"}, at);
    individual_ = optional_bool(json, "individual_digits", false, at);
  }
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      split_runs(p, char_runs(p.text, is_numeric),
                 individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, out);
    });
  }

 private:
  bool individual_ = false;
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      split_runs(p, char_runs(p.text, is_white_space), SplitBehavior::kRemoved, out);
    });
  }
};

// tokenizers' Whitespace, Rust regex \w+|[^\w\s]+ kept and the rest dropped: runs of word characters and runs
// of other non-space characters are the words (an invalid byte is an "other" character).
class Whitespace final : public PreTokenizer {
 public:
  void apply(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      enum Class { kNone, kWord, kSpace, kOther };
      std::vector<MatchRun> runs;
      Class run_class = kNone;
      for (std::size_t pos = 0; pos < p.text.size();) {
        const std::size_t start = pos;
        char32_t cp = 0;
        const bool valid = utf8_next(p.text, pos, cp);
        if (!valid) pos = start + 1;
        const Class c = !valid ? kOther : is_word_char(cp) ? kWord : is_white_space(cp) ? kSpace : kOther;
        if (c == run_class) {
          runs.back().end = pos;
        } else {
          runs.push_back({start, pos, c == kSpace});
        }
        run_class = c;
      }
      split_runs(p, runs, SplitBehavior::kRemoved, out);
    });
  }
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<Piece>& pieces) const override {
    for (const auto& s : steps_) s->apply(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

void split_runs(const Piece& parent, const std::vector<MatchRun>& runs, SplitBehavior behavior,
                std::vector<Piece>& out) {
  // (start, end, remove) after the behaviour, as NormalizedString::split computes them.
  struct Cut {
    std::size_t start, end;
    bool remove;
  };
  std::vector<Cut> cuts;
  cuts.reserve(runs.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const MatchRun& r : runs) cuts.push_back({r.start, r.end, false});
      break;
    case SplitBehavior::kRemoved:
      for (const MatchRun& r : runs) cuts.push_back({r.start, r.end, r.is_match});
      break;
    case SplitBehavior::kContiguous:
      for (const MatchRun& r : runs) {
        if (r.is_match == previous_match && !cuts.empty()) {
          cuts.back().end = r.end;
        } else {
          cuts.push_back({r.start, r.end, false});
        }
        previous_match = r.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const MatchRun& r : runs) {
        if (r.is_match && !previous_match && !cuts.empty()) {
          cuts.back().end = r.end;
        } else {
          cuts.push_back({r.start, r.end, false});
        }
        previous_match = r.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->is_match && !previous_match && !cuts.empty()) {
          cuts.back().start = it->start;
        } else {
          cuts.push_back({it->start, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(cuts.begin(), cuts.end());
      break;
  }
  for (const Cut& c : cuts) {
    if (c.remove || c.end == c.start) continue;
    Piece p;
    p.text = parent.text.substr(c.start, c.end - c.start);
    p.at_start = parent.at_start && c.start == 0;
    out.push_back(std::move(p));
  }
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const HfJson& json, const JsonPlace& at) {
  if (json.is_null()) return nullptr;
  const std::string type = component_type(json, at);
  if (type == "Split") return std::make_unique<Split>(json, at);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>(json, at);
  if (type == "Metaspace") return std::make_unique<Metaspace>(json, at);
  if (type == "Digits") return std::make_unique<Digits>(json, at);
  if (type == "Whitespace") {
    reject_unknown_keys(json, {}, at);
    return std::make_unique<Whitespace>();
  }
  if (type == "WhitespaceSplit") {
    reject_unknown_keys(json, {}, at);
    return std::make_unique<WhitespaceSplit>();
  }
  if (type == "Sequence") {
    reject_unknown_keys(json, {"pretokenizers"}, at);
    return std::make_unique<Sequence>(parse_steps<PreTokenizer>(json, "pretokenizers", at, parse_pre_tokenizer));
  }
  json_fail(at, "unsupported pre-tokenizer type '", type, "' (supported: ", kSupported, ")");
}

}  // namespace gtpo::data::hf
