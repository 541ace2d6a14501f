#include "data/tokenizer/hf/model.h"

#include "data/tokenizer/hf/bpe_model.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::hf {
namespace {

constexpr int64_t kMaxVocab = int64_t{1} << 24;

// tokenizers' WordLevel: a word is its vocabulary id, else unk_token's id; with neither, tokenizers fails
// ("Missing [UNK] token from the vocabulary"), and so does encode here, naming the word.
class WordLevelModel final : public Model {
 public:
  WordLevelModel(const HfJson& model, const JsonPlace& at) {
    reject_unknown_keys(model, {"vocab", "unk_token"}, at);
    read_vocab(required_field(model, "vocab", at), at);
    unk_token_ = "<unk>";  // tokenizers' default
    if (const HfJson* unk = optional_field(model, "unk_token")) {
      if (!unk->is_string()) json_fail(at, "'unk_token' must be a string, found ", unk->dump());
      unk_token_ = unk->get<std::string>();
    }
    unk_id_ = id_of(unk_token_);
  }
  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    const int32_t id = id_of(word);
    GTPO_CHECK(id >= 0 || unk_id_ >= 0, "WordLevel tokenizer: '", escape_for_log(word),
               "' is not in the vocabulary and its unk_token '", escape_for_log(unk_token_),
               "' is not either (Hugging Face tokenizers fails here too)");
    out.push_back(id >= 0 ? id : unk_id_);
  }

 private:
  std::string unk_token_;
  int32_t unk_id_ = -1;
};

}  // namespace

int32_t Model::id_of(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void Model::read_vocab(const HfJson& vocab, const JsonPlace& at) {
  if (!vocab.is_object()) json_fail(at, "'vocab' must be an object, found ", vocab.type_name());
  vocab_.reserve(vocab.size() * 2);
  tokens_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const HfJson& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab) {
      json_fail(at, "'vocab' entry '", escape_for_log(it.key()), "' must have an id in [0, ", kMaxVocab,
                "), found ", v.dump());
    }
    const auto id = v.get<int32_t>();
    if (static_cast<std::size_t>(id) >= tokens_.size()) tokens_.resize(static_cast<std::size_t>(id) + 1);
    if (!tokens_[id].empty()) {
      json_fail(at, "'vocab' id ", id, " is used by both '", escape_for_log(tokens_[id]), "' and '",
                escape_for_log(it.key()), "'");
    }
    if (it.key().empty()) json_fail(at, "'vocab' has an empty token (id ", id, ")");
    tokens_[id] = it.key();
    vocab_.emplace(it.key(), id);
  }
}

std::unique_ptr<Model> parse_model(const HfJson& model, const JsonPlace& at) {
  const std::string type = component_type(model, at);
  if (type == "BPE") return std::make_unique<BpeModel>(model, at);
  if (type == "WordLevel") return std::make_unique<WordLevelModel>(model, at);
  json_fail(at, "unsupported model type '", type, "' (supported: BPE, WordLevel; ",
            type == "Unigram"     ? "Unigram, SentencePiece's unigram language model, is not implemented"
            : type == "WordPiece" ? "WordPiece, BERT's greedy longest-match model, is not implemented"
                                  : "Unigram and WordPiece are not implemented",
            ")");
}

}  // namespace gtpo::data::hf
