// load_tokenizer: picks the tokenizer kind from the file's model type.
#include <filesystem>

#include "data/tokenizer/bpe_tokenizer.h"
#include "data/tokenizer/char_tokenizer.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

std::unique_ptr<Tokenizer> tokenizer_from_json(const Json& root, const std::string& path) {
  try {
    GTPO_CHECK(root.is_object(), file_context(path), "expected a JSON object, found ", root.type_name());
    const Json& model = require_object(root, "model", "", path);
    const std::string type = require_string(model, "type", "model", path);
    if (type == "BPE") return BpeTokenizer::from_json(root, path);  // kind "bpe" or "byte" from its layout
    if (type == "WordLevel") return CharTokenizer::from_json(root, path);
    fail(file_context(path), "unsupported model type '", type, "' (expected 'BPE' or 'WordLevel')");
  } catch (const nlohmann::json::exception& e) {
    // A value of an unexpected JSON type that slipped past the explicit checks.
    fail(file_context(path), "malformed: ", e.what());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path_in) {
  std::string path = path_in;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path = (std::filesystem::path(path) / "tokenizer.json").string();
  return tokenizer_from_json(read_json_file(path), path);
}

std::unique_ptr<Tokenizer> parse_tokenizer(const std::string& text, const std::string& label) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(file_context(label), "bad JSON: ", e.what());
  }
  return tokenizer_from_json(root, label);
}

}  // namespace gtpo::data
