// load_tokenizer / parse_tokenizer: picks the implementation from the file. gtpo's char layout (a WordLevel
// model over single characters, CharTokenizer::has_char_layout) is the char tokenizer; every other file (BPE,
// any other WordLevel, and the model types refused by name) goes to HfTokenizer, as Hugging Face reads it.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"
#include "runtime/error.h"
#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::data {
namespace {

std::unique_ptr<Tokenizer> tokenizer_from_text(std::string text, const std::string& path) {
  const hf::HfJson root = io::parse_json_or_fail<hf::HfJson>(text, file_context(path) + "bad JSON: ");
  try {
    GTPO_CHECK(root.is_object(), file_context(path), "expected a JSON object, found ", root.type_name());
    auto model = root.find("model");
    GTPO_CHECK(model != root.end(), file_context(path), "missing key 'model'");
    GTPO_CHECK(model->is_object(), file_context(path), "'model' must be an object, found ", model->type_name());
    auto type = model->find("type");
    GTPO_CHECK(type != model->end(), file_context(path), "missing key 'model.type'");
    GTPO_CHECK(type->is_string(), file_context(path), "'model.type' must be a string, found ", type->type_name());
    if (*type == "WordLevel" && CharTokenizer::has_char_layout(root)) {
      return CharTokenizer::from_json(Json::parse(text), path);
    }
    return HfTokenizer::from_json(root, std::move(text), path);
  } catch (const nlohmann::json::exception& e) {
    // A value of an unexpected JSON type that slipped past the explicit checks.
    fail(file_context(path), "malformed: ", e.what());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path_in) {
  std::filesystem::path path = path_in;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) path /= "tokenizer.json";
  io::check_input_file(path.string(), io::kMaxConfigBytes, "tokenizer file");
  std::ifstream in(path, std::ios::binary);
  GTPO_CHECK(in.good(), file_context(path.string()), "cannot open: ", std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  GTPO_CHECK(!in.bad(), file_context(path.string()), "read error");
  auto tok = tokenizer_from_text(std::move(buffer).str(), path.string());
  const std::filesystem::path dir = path.parent_path();
  if (auto config = read_tokenizer_config_in(dir.string())) tok->apply_config(*config, (dir / "tokenizer_config.json").string());
  return tok;
}

std::unique_ptr<Tokenizer> parse_tokenizer(const std::string& text, const std::string& label) {
  return tokenizer_from_text(text, label);
}

}  // namespace gtpo::data
