#include "data/tokenizer/tokenizer_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_class.h"
#include "data/tokenizer/tokenizer_file.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"
#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::data {
namespace {

std::string context(const std::string& path) { return "tokenizer config '" + path + "': "; }

std::optional<std::string> read_role(const nlohmann::json& root, const char* key, const std::string& path) {
  auto it = root.find(key);
  if (it == root.end()) return std::nullopt;
  if (it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  fail(context(path), "'", key, "' must be a string, null or {\"content\": ...}, found ", it->dump());
}

std::optional<bool> read_bool(const nlohmann::json& root, const char* key, const std::string& path) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::nullopt;
  GTPO_CHECK(it->is_boolean(), context(path), "'", key, "' must be a boolean, found ", it->dump());
  return it->get<bool>();
}

// The JSON object in PATH; WHAT ("tokenizer config") names it in errors.
nlohmann::json read_json_object(const std::string& path, const std::string& what) {
  io::check_input_file(path, io::kMaxConfigBytes, what);
  std::ifstream in(path, std::ios::binary);
  GTPO_CHECK(in.good(), what, " '", path, "': cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  nlohmann::json root = io::parse_json_or_fail(buf.str(), what + " '" + path + "': bad JSON: ");
  GTPO_CHECK(root.is_object(), what, " '", path, "': expected a JSON object");
  return root;
}

// config.json's "model_type" ("" when absent): AutoTokenizer's choice of class without a tokenizer_class.
std::string read_model_type(const std::string& path) {
  const nlohmann::json root = read_json_object(path, "model config");
  auto it = root.find("model_type");
  if (it == root.end() || it->is_null()) return "";
  GTPO_CHECK(it->is_string(), "model config '", path, "': 'model_type' must be a string, found ", it->dump());
  return it->get<std::string>();
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& path) {
  const nlohmann::json root = read_json_object(path, "tokenizer config");
  TokenizerConfig cfg;
  cfg.bos_token = read_role(root, "bos_token", path);
  cfg.eos_token = read_role(root, "eos_token", path);
  cfg.pad_token = read_role(root, "pad_token", path);
  cfg.unk_token = read_role(root, "unk_token", path);
  cfg.add_bos_token = read_bool(root, "add_bos_token", path);
  cfg.add_eos_token = read_bool(root, "add_eos_token", path);
  if (auto it = root.find("tokenizer_class"); it != root.end() && !it->is_null()) {
    GTPO_CHECK(it->is_string(), context(path), "'tokenizer_class' must be a string or null, found ",
               it->dump());
    cfg.tokenizer_class = it->get<std::string>();
  }
  if (auto it = root.find("chat_template"); it != root.end() && !it->is_null()) {
    if (it->is_string()) {
      cfg.chat_template = it->get<std::string>();
    } else {
      GTPO_CHECK(it->is_array(), context(path), "'chat_template' must be a string or a list of {name, template}");
      for (std::size_t i = 0; i < it->size(); ++i) {
        const auto& e = (*it)[i];
        GTPO_CHECK(e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("template") &&
                       e["template"].is_string(),
                   context(path), "'chat_template[", i, "]' must be {\"name\": ..., \"template\": ...}");
        if (e["name"] == "default") cfg.chat_template = e["template"].get<std::string>();
      }
    }
  }
  if (!cfg.chat_template.empty()) cfg.chat_template_label = path + " chat_template";
  if (auto it = root.find("model_max_length"); it != root.end() && it->is_number_integer()) {
    // transformers writes 1e30-ish for "no limit"; that arrives as a float and stays unknown.
    if (it->get<int64_t>() > 0) cfg.model_max_length = it->get<int64_t>();
  }
  return cfg;
}

std::optional<TokenizerConfig> read_tokenizer_config_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  const fs::path jinja_path = fs::path(dir) / "chat_template.jinja";
  const fs::path model_config_path = fs::path(dir) / "config.json";
  const bool has_config = fs::exists(config_path, ec), has_jinja = fs::exists(jinja_path, ec);
  const bool has_model_config = fs::exists(model_config_path, ec);
  if (!has_config && !has_jinja && !has_model_config) return std::nullopt;
  TokenizerConfig cfg = has_config ? read_tokenizer_config(config_path.string()) : TokenizerConfig{};
  if (cfg.tokenizer_class.empty() && has_model_config)
    cfg.model_type = read_model_type(model_config_path.string());
  if (has_jinja) {
    io::check_input_file(jinja_path.string(), io::kMaxConfigBytes, "chat template");
    std::ifstream in(jinja_path, std::ios::binary);
    GTPO_CHECK(in.good(), "chat template '", jinja_path.string(), "': cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    cfg.chat_template = text.str();
    // transformers reads it as UTF-8 text and fails on anything else; so does gtpo, by name.
    GTPO_CHECK(utf8_valid(cfg.chat_template), "chat template '", jinja_path.string(),
               "': not valid UTF-8 (a template is UTF-8 text)");
    cfg.chat_template_label = jinja_path.string();
  }
  return cfg;
}

std::string tokenizer_config_text(const Tokenizer& tok, std::optional<int64_t> model_max_length) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const TokenizerConfig& loaded = tok.config();
  const std::optional<ClassSpecialTokens> class_tokens = class_special_tokens(loaded);
  j["tokenizer_class"] = class_tokens ? class_tokens->fast_class : std::string("PreTrainedTokenizerFast");
  auto role = [&](int32_t id) -> nlohmann::ordered_json {
    if (id < 0) return nullptr;
    return tok.token_string(id);
  };
  j["bos_token"] = role(tok.bos_id());
  j["eos_token"] = role(tok.eos_id());
  j["pad_token"] = role(tok.pad_id());
  if (loaded.unk_token && !loaded.unk_token->empty()) j["unk_token"] = *loaded.unk_token;
  if (class_tokens) {
    j["add_bos_token"] = class_tokens->add_bos;
    j["add_eos_token"] = class_tokens->add_eos;
  } else {
    if (loaded.add_bos_token) j["add_bos_token"] = *loaded.add_bos_token;
    if (loaded.add_eos_token) j["add_eos_token"] = *loaded.add_eos_token;
  }
  // transformers would otherwise "clean up" spaces before punctuation on decode, unlike gtpo.
  j["clean_up_tokenization_spaces"] = false;
  if (!model_max_length) model_max_length = loaded.model_max_length;
  if (model_max_length) j["model_max_length"] = *model_max_length;
  if (!tok.chat_template().empty()) j["chat_template"] = tok.chat_template();
  return j.dump(2) + "\n";
}

void write_tokenizer_config(const Tokenizer& tok, const std::string& path, std::optional<int64_t> model_max_length) {
  write_file_atomic(path, tokenizer_config_text(tok, model_max_length));
}

}  // namespace gtpo::data
