// Reading and writing tokenizer files: JSON parsing with errors that name the file, checked field access,
// and atomic writes.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gtpo::data {

using Json = nlohmann::ordered_json;  // ordered so written files list vocab entries in id order

// A tokenizer.json of gtpo's own tokenizers, fields in the order Hugging Face writes them: no truncation,
// padding, normalizer or post-processor.
Json own_tokenizer_json(Json added_tokens, Json pre_tokenizer, Json decoder, Json model);

// Writes path.tmp, fsyncs it, renames it over path, then fsyncs the directory.
void write_file_atomic(const std::string& path, std::string_view content);

// Field access that fails with "tokenizer file 'PATH': missing key 'model.vocab'" style messages.
// `where` is the dotted location of `obj` in the file ("" at top level).
const Json& require_key(const Json& obj, const std::string& key, const std::string& where, const std::string& path);
const Json& require_object(const Json& obj, const std::string& key, const std::string& where,
                           const std::string& path);
const Json& require_array(const Json& obj, const std::string& key, const std::string& where,
                          const std::string& path);
std::string require_string(const Json& obj, const std::string& key, const std::string& where,
                           const std::string& path);

// "tokenizer file 'PATH': " prefix for custom messages.
std::string file_context(const std::string& path);

}  // namespace gtpo::data
