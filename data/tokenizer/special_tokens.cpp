#include "data/tokenizer/special_tokens.h"

#include <initializer_list>

#include "runtime/error.h"

namespace gtpo::data {

Json added_token_json(int32_t id, const std::string& content, bool special) {
  Json j = Json::object();
  j["id"] = id;
  j["content"] = content;
  j["single_word"] = false;
  j["lstrip"] = false;
  j["rstrip"] = false;
  j["normalized"] = false;
  j["special"] = special;
  return j;
}

std::vector<AddedToken> parse_added_tokens(const Json& root, const std::string& path) {
  std::vector<AddedToken> out;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return out;
  GTPO_CHECK(it->is_array(), file_context(path), "'added_tokens' must be an array, found ", it->type_name());
  for (std::size_t i = 0; i < it->size(); ++i) {
    const Json& e = (*it)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    const Json& id = require_key(e, "id", where, path);
    GTPO_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < INT32_MAX,
               file_context(path), "'", where, ".id' must be a non-negative integer, found ", id.dump());
    AddedToken t;
    t.id = id.get<int32_t>();
    t.content = require_string(e, "content", where, path);
    auto sp = e.find("special");
    t.special = sp == e.end() || (sp->is_boolean() && sp->get<bool>());
    out.push_back(std::move(t));
  }
  return out;
}

SpecialRoles find_special_roles(const std::vector<AddedToken>& tokens) {
  auto find = [&](std::initializer_list<const char*> names) -> int32_t {
    for (const char* name : names) {
      for (const AddedToken& t : tokens) {
        if (t.special && t.content == name) return t.id;
      }
    }
    return -1;
  };
  SpecialRoles r;
  r.bos = find({"<bos>", "<s>", "<|begin_of_text|>", "<|startoftext|>", "<|endoftext|>"});
  r.eos = find({"<eos>", "</s>", "<|endoftext|>", "<|end_of_text|>"});
  r.pad = find({"<pad>", "<|pad|>", "[PAD]"});
  return r;
}

}  // namespace gtpo::data
