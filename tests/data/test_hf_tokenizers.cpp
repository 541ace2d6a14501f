// Hugging Face tokenizer.json support against the `tokenizers` library itself: fixtures made by
// scripts/reference/hf_tokenizers.py (tokenizers 0.20.3) in the GPT-2, Qwen2, Llama-3, SmolLM2 and
// Llama-2 (Metaspace + byte_fallback) layouts, 2,200 varied strings each.
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_config.h"
#include "runtime/error.h"
#include "tests/data/test_tokenizer_util.h"

using Catch::Matchers::Contains;
using gtpo::data::load_tokenizer;
using gtpo::data::parse_tokenizer;
using gtpo::data::test::read_text;
using gtpo::data::test::scratch_path;
using gtpo::data::test::write_text;

namespace {

const std::string kFixtures = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/tokenizers";
// "mixed" is no real family: it carries the component options the others leave out, on 600 strings.
const char* const kLayouts[] = {"gpt2", "qwen2", "llama3", "smollm2", "llama2", "mixed", "wordlevel"};

std::vector<std::string> fixture_strings() {
  const auto j = nlohmann::json::parse(read_text(kFixtures + "/strings.json"));
  return j.get<std::vector<std::string>>();
}

struct Expected {
  std::vector<std::vector<int32_t>> ids;
  std::map<std::size_t, std::vector<int32_t>> ids_special;
  std::map<std::size_t, std::string> decoded;
};

Expected expected(const std::string& layout) {
  const auto j = nlohmann::json::parse(read_text(kFixtures + "/" + layout + "/expected.json"));
  Expected e;
  e.ids = j["ids"].get<std::vector<std::vector<int32_t>>>();
  for (auto it = j["ids_special"].begin(); it != j["ids_special"].end(); ++it) {
    e.ids_special[std::stoul(it.key())] = it.value().get<std::vector<int32_t>>();
  }
  for (auto it = j["decoded"].begin(); it != j["decoded"].end(); ++it) {
    e.decoded[std::stoul(it.key())] = it.value().get<std::string>();
  }
  return e;
}

bool mentions_added_token(const std::string& s) {
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|begin_of_text|>"}) {
    if (s.find(t) != std::string::npos) return true;
  }
  return false;
}

std::string fixture_json(const std::string& layout) { return read_text(kFixtures + "/" + layout + "/tokenizer.json"); }

}  // namespace

TEST_CASE("hf tokenizers: zero id mismatches against the tokenizers library on every layout", "[hf-tokenizer]") {
  const std::vector<std::string> strings = fixture_strings();
  REQUIRE(strings.size() >= 2000);
  for (const char* layout : kLayouts) {
    INFO("layout " << layout);
    const auto tok = load_tokenizer(kFixtures + "/" + layout);
    const Expected e = expected(layout);
    REQUIRE(e.ids.size() == (std::string(layout) == "mixed" ? 600 : strings.size()));
    int mismatches = 0, mismatches_special = 0, embedded = 0;
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      embedded += mentions_added_token(strings[i]);
      if (tok->encode_hf(strings[i], false) != e.ids[i]) {
        if (++mismatches <= 5) UNSCOPED_INFO("mismatch on string " << i << ": '" << strings[i] << "'");
      }
      auto it = e.ids_special.find(i);
      if (tok->encode_hf(strings[i], true) != (it == e.ids_special.end() ? e.ids[i] : it->second)) ++mismatches_special;
    }
    CHECK(embedded > 50);  // the corpus does exercise added tokens embedded in text
    CHECK(mismatches == 0);
    CHECK(mismatches_special == 0);
  }
}

TEST_CASE("hf tokenizers: decode gives what the tokenizers library decodes", "[hf-tokenizer]") {
  const std::vector<std::string> strings = fixture_strings();
  for (const char* layout : kLayouts) {
    INFO("layout " << layout);
    const auto tok = load_tokenizer(kFixtures + "/" + layout);
    const Expected e = expected(layout);
    int mismatches = 0, replacement_chars = 0;
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      auto it = e.decoded.find(i);
      const std::string want = it == e.decoded.end() ? strings[i] : it->second;
      // tokenizers writes U+FFFD where bytes are not valid UTF-8; gtpo keeps the bytes (docs/tokenizers.md).
      if (want.find("\xef\xbf\xbd") != std::string::npos) {
        ++replacement_chars;
        continue;
      }
      if (tok->decode(e.ids[i]) != want && ++mismatches <= 5) UNSCOPED_INFO("decode mismatch on string " << i);
    }
    CHECK(mismatches == 0);
    CHECK(replacement_chars < 20);
  }
}

TEST_CASE("hf tokenizers: text-only encode matches tokenizers where the text has no added token and round-trips",
          "[hf-tokenizer]") {
  const std::vector<std::string> strings = fixture_strings();
  for (const char* layout : {"gpt2", "qwen2", "llama3", "smollm2"}) {
    INFO("layout " << layout);
    const auto tok = load_tokenizer(kFixtures + "/" + layout);
    const Expected e = expected(layout);
    int compared = 0;
    for (std::size_t i = 0; i < strings.size(); ++i) {
      const std::vector<int32_t> ids = tok->encode(strings[i]);
      if (!mentions_added_token(strings[i])) {
        ++compared;
        CHECK(ids == e.ids[i]);
      }
      // Byte-level layouts lose nothing; Qwen2's NFC normalizer composes characters first.
      if (std::string(layout) != "qwen2") CHECK(tok->decode(ids) == strings[i]);
      // Added tokens in the text stay plain text.
      for (int32_t id : ids) CHECK_FALSE(tok->is_special(id));
    }
    CHECK(compared > 1500);
  }
  // Arbitrary bytes, invalid UTF-8 included, round-trip through byte-level layouts.
  std::mt19937 rng(7);
  const auto tok = load_tokenizer(kFixtures + "/llama3");
  for (int n = 0; n < 200; ++n) {
    const std::string s = gtpo::data::test::random_bytes(rng, n);
    CHECK(tok->decode(tok->encode(s)) == s);
  }
}

TEST_CASE("hf tokenizers: special tokens in text are matched only by encode_hf", "[hf-tokenizer]") {
  const auto tok = load_tokenizer(kFixtures + "/qwen2");
  const int32_t im_start = tok->token_id("<|im_start|>");
  REQUIRE(im_start >= 0);
  const std::string text = "<|im_start|>user\nhi";
  const auto hf_ids = tok->encode_hf(text, true);
  REQUIRE(!hf_ids.empty());
  CHECK(hf_ids[0] == im_start);
  const auto plain = tok->encode(text);
  CHECK(std::find(plain.begin(), plain.end(), im_start) == plain.end());
  CHECK(tok->decode(plain) == text);
  CHECK(tok->decode_skipping_special(hf_ids) == "user\nhi");
  // Llama 3's post-processor adds its BOS only with add_special_tokens.
  const auto llama = load_tokenizer(kFixtures + "/llama3");
  const int32_t bos = llama->token_id("<|begin_of_text|>");
  CHECK(llama->encode_hf("hi", true).front() == bos);
  CHECK(llama->encode_hf("hi", false).front() != bos);
  CHECK(llama->encode("1234") == llama->encode_hf("1234", false));
}

TEST_CASE("hf tokenizers: unsupported components are errors naming the component", "[hf-tokenizer]") {
  const auto base = nlohmann::json::parse(fixture_json("llama3"));
  auto refuse = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& what) {
    nlohmann::json j = base;
    edit(j);
    CHECK_THROWS_WITH(parse_tokenizer(j.dump(), "x/tokenizer.json"), Contains("x/tokenizer.json") && Contains(what));
  };
  refuse([](auto& j) { j["pre_tokenizer"]["pretokenizers"][1] = {{"type", "UnicodeScripts"}}; },
         "pre_tokenizer.pretokenizers[1]: unsupported pre-tokenizer type 'UnicodeScripts'");
  refuse([](auto& j) { j["normalizer"] = {{"type", "BertNormalizer"}}; }, "normalizer: unsupported normalizer type 'BertNormalizer'");
  refuse([](auto& j) { j["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}}; }, "decoder: unsupported decoder type 'WordPiece'");
  refuse([](auto& j) { j["post_processor"] = {{"type", "Mystery"}}; }, "post_processor: unsupported post-processor type");
  refuse([](auto& j) { j["model"]["type"] = "Unigram"; }, "unsupported model type 'Unigram'");
  refuse([](auto& j) { j["model"]["dropout"] = 0.1; }, "BPE dropout 0.1 is not supported");
  refuse([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; }, "unsupported behavior 'Sideways'");
  refuse([](auto& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed"; }, "bad regex '(unclosed'");
  refuse([](auto& j) { j["pre_tokenizer"]["pretokenizers"][1]["new_option"] = true; }, "unsupported option 'new_option'");
  refuse([](auto& j) { j["truncation"] = {{"max_length", 8}}; }, "truncation: must be null");
}

TEST_CASE("hf tokenizers: a Split regex that backtracks over long text stops with an error naming it",
          "[hf-tokenizer]") {
  // a(?=.*b) rescans the rest of the text at every 'a': 256 KiB of them would run for minutes, in tokenizers
  // too. The search stops once it has run for OnigRegex::search_time_limit (2.25 s here).
  auto j = nlohmann::json::parse(fixture_json("llama3"));
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "a(?=.*b)";
  const auto tok = parse_tokenizer(j.dump(), "x/tokenizer.json");
  CHECK(tok->encode("aab ab") == tok->encode("aab ab"));  // short text: fine
  CHECK_THROWS_WITH(tok->encode(std::string(256 * 1024, 'a')),
                    Contains("x/tokenizer.json") && Contains("pre_tokenizer.pretokenizers[0]") &&
                        Contains("regex 'a(?=.*b)' ran for more than 2.3 s on 262144 bytes of text"));
}

TEST_CASE("hf tokenizers: save writes the file as loaded, and loading it again gives the same ids", "[hf-tokenizer]") {
  const std::vector<std::string> strings = fixture_strings();
  for (const char* layout : kLayouts) {
    const auto tok = load_tokenizer(kFixtures + "/" + layout);
    const std::string path = scratch_path(std::string(layout) + "_saved.json");
    tok->save(path);
    CHECK(read_text(path) == fixture_json(layout));
    const auto again = load_tokenizer(path);
    for (std::size_t i = 0; i < strings.size(); i += 7) CHECK(again->encode_hf(strings[i], true) == tok->encode_hf(strings[i], true));
  }
}

TEST_CASE("hf tokenizers: tokenizer_config.json roles and chat template", "[hf-tokenizer]") {
  const auto qwen = load_tokenizer(kFixtures + "/qwen2");
  CHECK(qwen->bos_id() == -1);  // bos_token: null
  CHECK(qwen->eos_id() == qwen->token_id("<|im_end|>"));
  CHECK(qwen->pad_id() == qwen->token_id("<|endoftext|>"));
  CHECK_THAT(qwen->chat_template(), Contains("<|im_start|>"));
  const auto llama = load_tokenizer(kFixtures + "/llama3");
  CHECK(llama->bos_id() == llama->token_id("<|begin_of_text|>"));
  CHECK(llama->eos_id() == llama->token_id("<|endoftext|>"));  // given as an AddedToken object
  CHECK(llama->chat_template() == "{{ bos_token }}{{ messages[0]['content'] }}");  // the "default" of a list
  const auto l2 = load_tokenizer(kFixtures + "/llama2");
  CHECK(l2->config().add_bos_token == std::optional<bool>(true));
  CHECK(l2->chat_template().empty());

  // Written back, the config names the same roles and template.
  const std::string dir = scratch_path("qwen_dir");
  std::filesystem::create_directories(dir);
  qwen->save(dir + "/tokenizer.json");
  gtpo::data::write_tokenizer_config(*qwen, dir + "/tokenizer_config.json", 4096);
  const auto cfg = nlohmann::json::parse(read_text(dir + "/tokenizer_config.json"));
  CHECK(cfg["tokenizer_class"] == "PreTrainedTokenizerFast");
  CHECK(cfg["bos_token"].is_null());
  CHECK(cfg["eos_token"] == "<|im_end|>");
  CHECK(cfg["model_max_length"] == 4096);
  const auto back = load_tokenizer(dir);
  CHECK(back->eos_id() == qwen->eos_id());
  CHECK(back->chat_template() == qwen->chat_template());

  // A role naming a token the vocabulary lacks is an error naming the file and key.
  write_text(dir + "/tokenizer_config.json", R"({"eos_token": "<nope>"})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("tokenizer_config.json") && Contains("eos_token") && Contains("<nope>"));
  write_text(dir + "/tokenizer_config.json", R"({"chat_template": 3})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("chat_template"));
}

TEST_CASE("hf tokenizers: the tokenizer class decides which special tokens tokenizer(text) adds",
          "[hf-tokenizer]") {
  // The Llama-2 layout: tokenizer.json's post-processor adds <s> (id 1); </s> is id 2. Llama's, Gemma's and
  // GPT-NeoX's transformers classes replace that post-processor by add_bos_token / add_eos_token.
  const std::string dir = scratch_path("tokenizer_class_dir");
  std::filesystem::create_directories(dir);
  write_text(dir + "/tokenizer.json", read_text(kFixtures + "/llama2/tokenizer.json"));
  const std::string text = "Hello world, 12 + 7 = 19";
  const auto encode_with = [&](const std::string& config) {
    write_text(dir + "/tokenizer_config.json", config);
    return load_tokenizer(dir)->encode_hf(text, true);
  };
  const std::vector<int32_t> plain = load_tokenizer(dir)->encode_hf(text, false);
  REQUIRE(!plain.empty());
  std::vector<int32_t> bos_plain = plain, plain_eos = plain;
  bos_plain.insert(bos_plain.begin(), 1);
  plain_eos.push_back(2);
  std::vector<int32_t> bos_plain_eos = bos_plain;
  bos_plain_eos.push_back(2);
  const std::string roles = R"("bos_token": "<s>", "eos_token": "</s>")";
  CHECK(encode_with("{" + roles + "}") == bos_plain);  // no class named, no config.json: the post-processor
  CHECK(encode_with(R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_eos_token": true, )" + roles +
                    "}") == bos_plain);  // the generic class ignores the two keys
  CHECK(encode_with(
            R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, )" +
            roles + "}") == plain_eos);
  CHECK(encode_with(R"({"tokenizer_class": "LlamaTokenizer", )" + roles + "}") ==
        bos_plain);  // defaults: BOS only
  CHECK(encode_with(R"({"tokenizer_class": "GPTNeoXTokenizerFast", )" + roles + "}") ==
        plain);  // defaults: none
  CHECK(encode_with(R"({"tokenizer_class": "GemmaTokenizerFast", "add_eos_token": true, )" + roles + "}") ==
        bos_plain_eos);

  // Written back, the copy names the class and both keys, so that it encodes as the original.
  write_text(dir + "/tokenizer_config.json",
             R"({"tokenizer_class": "LlamaTokenizer", "add_bos_token": false, "add_eos_token": true, )" +
                 roles + "}");
  const auto llama = load_tokenizer(dir);
  const auto written = nlohmann::json::parse(gtpo::data::tokenizer_config_text(*llama));
  CHECK(written["tokenizer_class"] == "LlamaTokenizerFast");
  CHECK(written["add_bos_token"] == false);
  CHECK(written["add_eos_token"] == true);
  const std::string copy = scratch_path("tokenizer_class_copy");
  std::filesystem::create_directories(copy);
  llama->save(copy + "/tokenizer.json");
  gtpo::data::write_tokenizer_config(*llama, copy + "/tokenizer_config.json");
  CHECK(load_tokenizer(copy)->encode_hf(text, true) == plain_eos);

  // Without tokenizer_config.json, AutoTokenizer picks the class from config.json's model_type.
  std::filesystem::remove(dir + "/tokenizer_config.json");
  write_text(dir + "/config.json", R"({"model_type": "mistral"})");
  CHECK(load_tokenizer(dir)->encode_hf(text, true) == bos_plain);
  write_text(dir + "/config.json", R"({"model_type": "gpt_neox"})");
  CHECK(load_tokenizer(dir)->encode_hf(text, true) == plain);
  write_text(dir + "/config.json", R"({"model_type": 7})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("config.json") && Contains("model_type"));
  std::filesystem::remove(dir + "/config.json");

  // A class that adds a BOS the tokenizer lacks is refused at load, as transformers refuses it.
  write_text(dir + "/tokenizer_config.json",
             R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": null})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("tokenizer_config.json") &&
                                             Contains("LlamaTokenizerFast") && Contains("add_bos_token") &&
                                             Contains("no bos_token"));
  write_text(dir + "/tokenizer_config.json", R"({"tokenizer_class": 3})");
  CHECK_THROWS_WITH(load_tokenizer(dir), Contains("tokenizer_class") && Contains("string"));
}

TEST_CASE("hf tokenizers: gtpo's own files keep their ids and kinds through HfTokenizer", "[hf-tokenizer]") {
  const auto byte = gtpo::data::make_byte_tokenizer(300);
  const std::string path = scratch_path("byte.json");
  byte->save(path);
  const auto loaded = load_tokenizer(path);
  CHECK(loaded->kind() == "byte");
  const std::string text = "Q: 12+7=? <eos> A: 19 \xff\xfe";
  CHECK(loaded->encode(text) == byte->encode(text));
  CHECK(loaded->encode_hf(text, true) == byte->encode_hf(text, true));
  CHECK(byte->encode_hf(text, true)[10] == byte->eos_id());
}
