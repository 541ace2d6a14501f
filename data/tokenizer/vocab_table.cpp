#include "data/tokenizer/vocab_table.h"

#include <map>

#include "runtime/error.h"

namespace gtpo::data {
namespace {
// Far above any real vocabulary; stops a corrupt id from allocating gigabytes.
constexpr int64_t kMaxVocab = int64_t{1} << 24;
}  // namespace

VocabTable build_vocab_table(const Json& vocab, const std::vector<AddedToken>& added, const std::string& path) {
  std::map<int64_t, std::pair<std::string, TokenOrigin>> by_id;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const Json& v = it.value();
    GTPO_CHECK(v.is_number_integer(), file_context(path), "'model.vocab' entry '", it.key(),
               "' must have an integer id, found ", v.dump());
    const int64_t id = v.get<int64_t>();
    GTPO_CHECK(id >= 0 && id < kMaxVocab, file_context(path), "'model.vocab' entry '", it.key(), "' has id ", id,
               " outside [0, ", kMaxVocab, ")");
    auto [pos, inserted] = by_id.emplace(id, std::make_pair(it.key(), TokenOrigin::kModel));
    GTPO_CHECK(inserted, file_context(path), "'model.vocab' id ", id, " is used by both '", pos->second.first,
               "' and '", it.key(), "'");
  }
  for (const AddedToken& t : added) {
    GTPO_CHECK(t.id < kMaxVocab, file_context(path), "added token '", t.content, "' has id ", t.id, " outside [0, ",
               kMaxVocab, ")");
    const TokenOrigin origin = t.special ? TokenOrigin::kSpecial : TokenOrigin::kAdded;
    auto [pos, inserted] = by_id.emplace(t.id, std::make_pair(t.content, origin));
    if (!inserted) {
      GTPO_CHECK(pos->second.first == t.content, file_context(path), "added token '", t.content, "' has id ", t.id,
                 " which 'model.vocab' gives to '", pos->second.first, "'");
      pos->second.second = origin;
    }
  }
  VocabTable table;
  table.text.reserve(by_id.size());
  for (const auto& [id, entry] : by_id) {
    GTPO_CHECK(id == static_cast<int64_t>(table.text.size()), file_context(path), "token ids must be contiguous from 0: id ",
               table.text.size(), " has no token");
    table.text.push_back(entry.first);
    table.origin.push_back(entry.second);
  }
  GTPO_CHECK(!table.text.empty(), file_context(path), "the vocabulary is empty");
  return table;
}

}  // namespace gtpo::data
