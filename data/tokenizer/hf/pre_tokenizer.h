// Hugging Face pre-tokenizers (tokenizer.json "pre_tokenizer"): Split (literal or Oniguruma regex, every
// delimiter behaviour, invert), ByteLevel (add_prefix_space, use_regex), Metaspace (replacement,
// prepend_scheme, split), Digits, WhitespaceSplit and Sequence. Anything else is refused.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

// One split of the text on its way to the model. Splits that already hold an added token (added_id >= 0)
// pass through every stage untouched.
struct Piece {
  std::string text;
  bool at_start = false;  // begins at offset 0 of the original text (Metaspace's prepend_scheme "first")
  int32_t added_id = -1;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece without an added token by its sub-pieces; empty pieces are dropped.
  virtual void apply(std::vector<Piece>& pieces) const = 0;
};

// `json` null means none (returns nullptr).
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const HfJson& json, const JsonPlace& at);

// (start, end, is_match) runs covering a string; the Split behaviours turn them into pieces.
struct MatchRun {
  std::size_t start, end;
  bool is_match;
};
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
// Applies a behaviour to runs covering `text`, appending the resulting non-empty sub-pieces of `parent`.
void split_runs(const Piece& parent, const std::vector<MatchRun>& runs, SplitBehavior behavior,
                std::vector<Piece>& out);

}  // namespace gtpo::data::hf
