#include <catch2/catch.hpp>
#include <filesystem>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/char_tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"
#include "runtime/error.h"
#include "test_tokenizer_util.h"

using namespace gtpo::data;
using gtpo::data::test::read_text;
using gtpo::data::test::scratch_path;
using gtpo::data::test::write_text;
using Catch::Matchers::Contains;

namespace {

std::string byte_text(int b) { return bytes_to_byte_level(std::string(1, static_cast<char>(b))); }

// A small Hugging Face style byte-level BPE file: the 256 bytes, "ab" = 256, "<|endoftext|>" = 257.
std::string hf_file(const std::string& merges) {
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += Json(byte_text(b)).dump() + ": " + std::to_string(b) + ", ";
  return R"({"version": "1.0", "added_tokens": [{"id": 257, "content": "<|endoftext|>", "special": true}],
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {)" + vocab + R"("ab": 256, "<|endoftext|>": 257}, "merges": [)" + merges + "]}}";
}

// Replaces the one occurrence of `from`, which must be there (keeps the malformed-file cases honest).
std::string edit(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE(
    "the byte tokenizer saves as a merge-free Hugging Face BPE tokenizer.json and loads back identically",
    "[tokenizer]") {
  const auto tok = make_byte_tokenizer(300);
  const std::string path = scratch_path("byte_level.json");
  tok->save(path);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

  const Json j = Json::parse(read_text(path));
  CHECK(j["model"]["type"] == "BPE");
  CHECK(j["pre_tokenizer"]["type"] == "ByteLevel");
  CHECK(j["pre_tokenizer"]["add_prefix_space"] == false);
  CHECK(j["decoder"]["type"] == "ByteLevel");
  CHECK(j["model"]["vocab"].size() == 300);
  CHECK(j["model"]["merges"].empty());
  CHECK(j["model"]["vocab"]["\xc4\xa0"] == ' ');  // space is "Ġ" (U+0120)
  REQUIRE(j["added_tokens"].size() == 300 - 256);
  CHECK(j["added_tokens"][2]["content"] == "<eos>");
  CHECK(j["added_tokens"][2]["id"] == 258);
  CHECK(j["added_tokens"][2]["special"] == true);

  const auto loaded = load_tokenizer(path);
  CHECK(loaded->kind() == "byte");
  CHECK(loaded->vocab_size() == 300);
  CHECK(loaded->pad_id() == 256);
  CHECK(loaded->bos_id() == 257);
  CHECK(loaded->eos_id() == 258);
  std::mt19937 rng(99);
  const std::string noise = test::random_bytes(rng, 3000) + "<eos><unused_3>";
  CHECK(loaded->encode(noise) == tok->encode(noise));
  CHECK(loaded->decode(loaded->encode(noise)) == noise);
  for (int32_t id : {0, 32, 255, 256, 299}) {
    CHECK(loaded->token_string(id) == tok->token_string(id));
    CHECK(loaded->token_id(tok->token_string(id)) == id);
    CHECK(tok->token_id(tok->token_string(id)) == id);
  }

  // Saving the loaded tokenizer reproduces the file byte for byte.
  const std::string again = scratch_path("byte_level_again.json");
  loaded->save(again);
  CHECK(read_text(again) == read_text(path));
}

TEST_CASE("a directory loads its tokenizer.json", "[tokenizer]") {
  const std::string dir = scratch_path("ckpt");
  std::filesystem::create_directories(dir);
  make_byte_tokenizer(300)->save(dir + "/tokenizer.json");
  CHECK(load_tokenizer(dir)->kind() == "byte");
}

TEST_CASE("char tokenizer saves as an HF WordLevel file and loads back", "[tokenizer]") {
  CharTokenizer tok("0123456789+= \n\xc3\xa9");
  const std::string path = scratch_path("char.json");
  tok.save(path);
  const Json j = Json::parse(read_text(path));
  CHECK(j["model"]["type"] == "WordLevel");
  CHECK(j["pre_tokenizer"]["type"] == "Split");
  CHECK(j["decoder"]["type"] == "Fuse");
  CHECK(j["model"]["vocab"]["\n"] == 16);
  CHECK(j["added_tokens"].size() == 3);
  const auto loaded = load_tokenizer(path);
  CHECK(loaded->kind() == "char");
  CHECK(loaded->vocab_size() == tok.vocab_size());
  CHECK(loaded->eos_id() == 2);
  const std::string text = "12+30 = 42\n\xc3\xa9";
  CHECK(loaded->encode(text) == tok.encode(text));
  CHECK_THROWS_WITH(loaded->encode("7x"), Contains("'x'") && Contains("byte offset 1"));
}

TEST_CASE("Hugging Face files with string or pair merges load", "[tokenizer]") {
  for (const std::string& merges : {std::string(R"("a b")"), std::string(R"(["a", "b"])")}) {
    const std::string path = scratch_path("hf.json");
    write_text(path, hf_file(merges));
    const auto tok = load_tokenizer(path);
    CHECK(tok->kind() == "bpe");
    CHECK(tok->vocab_size() == 258);
    CHECK(tok->eos_id() == 257);
    CHECK(tok->bos_id() == 257);  // GPT-2 uses <|endoftext|> for both
    CHECK(tok->pad_id() == -1);
    CHECK(tok->encode("abab ab") == std::vector<int32_t>{256, 256, ' ', 256});
    CHECK(tok->decode(std::vector<int32_t>{256, 257}) == "ab<|endoftext|>");
    CHECK(tok->is_special(257));
  }
}

TEST_CASE("ignore_merges emits a chunk that is itself a token whole", "[tokenizer]") {
  const std::string path = scratch_path("ignore_merges.json");
  write_text(path, edit(hf_file(""), "\"type\": \"BPE\",", "\"type\": \"BPE\", \"ignore_merges\": true,"));
  const auto tok = load_tokenizer(path);
  CHECK(tok->kind() == "bpe");
  CHECK(tok->encode("ab abab") == std::vector<int32_t>{256, ' ', 'a', 'b', 'a', 'b'});
  tok->save(path);
  CHECK(Json::parse(read_text(path))["model"]["ignore_merges"] == true);
}

TEST_CASE("malformed tokenizer files name the file and the problem", "[tokenizer]") {
  const std::string path = scratch_path("bad.json");
  auto expect_error = [&](const std::string& content, const std::string& message) {
    write_text(path, content);
    CHECK_THROWS_WITH(load_tokenizer(path), Contains(path) && Contains(message));
  };
  CHECK_THROWS_WITH(load_tokenizer(scratch_path("missing.json")), Contains("missing.json") && Contains("cannot open"));
  expect_error("{\"model\": ", "bad JSON");
  expect_error("[1, 2]", "expected a JSON object");
  expect_error("{}", "missing key 'model'");
  expect_error(R"({"model": {"vocab": {}}})", "missing key 'model.type'");
  expect_error(R"({"model": {"type": "Unigram"}})", "unsupported model type 'Unigram'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})", "the vocabulary is empty");
  expect_error(hf_file(R"("a zz")"), "model: merge 0 references unknown token 'zz'");
  expect_error(hf_file(R"("a b c")"), "must be two tokens separated by one space");
  expect_error(hf_file(R"(42)"), "merge 0 must be a string");
  expect_error(hf_file(R"("b a")"), "merge 0 produces 'ba', which is not in 'vocab'");
  const std::string good = hf_file(R"("a b")");
  write_text(path, good);
  CHECK_NOTHROW(load_tokenizer(path));
  expect_error(edit(good, "\"ab\": 256", "\"ab\": 300"), "id 256 has no token");
  expect_error(edit(good, "\"ab\": 256", "\"ab\": 0"), "id 0 is used by both");
  expect_error(edit(good, "\"ab\": 256", "\"ab\": \"x\""), "'vocab' entry 'ab' must have an id in [0, 16777216), found \"x\"");
  expect_error(edit(good, "\"ab\": 256", "\"a\xe2\x82\xac\": 256"), "merge 0 produces 'ab', which is not in 'vocab'");
  expect_error(edit(good, "\"merges\"", "\"mergez\""), "model: unsupported option 'mergez'");
  expect_error(edit(good, "\"merges\": [\"a b\"]", "\"dropout\": null"), "model: missing key 'merges'");
  expect_error(edit(good, "\"vocab\": {", "\"vocab\": [{"), "bad JSON");
  expect_error(edit(good, "\"special\": true", "\"special\": true, \"id\": -4"), "added_tokens[0]: 'id' must be a non-negative integer below 2^24, found -4");
  expect_error(edit(good, "\"id\": 257,", "\"id\": \"x\","), "added_tokens[0]: 'id' must be a non-negative integer");
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})",
               "WordPiece, BERT's greedy longest-match model, is not implemented");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})",
               "Unigram, SentencePiece's unigram language model, is not implemented");
  expect_error(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": 7}})",
               "'unk_token' must be a string");
  expect_error(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}, "continuing_subword_prefix": "##"}})",
               "model: unsupported option 'continuing_subword_prefix'");
}

TEST_CASE("a WordLevel file that is not gtpo's char layout is read as Hugging Face's WordLevel model",
          "[tokenizer]") {
  // What tokenizers 0.20.3 gives for this file (its own to_str()): a word is its id or unk_token's id, and
  // with no decoder the tokens are joined with spaces. Read as a char tokenizer, "aba" was [0, 1, 0].
  const std::string file =
      R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,)"
      R"("pre_tokenizer":null,"post_processor":null,"decoder":null,"model":{"type":"WordLevel",)"
      R"("vocab":{"a":0,"b":1,"aba":2,"[UNK]":3},"unk_token":"[UNK]"}})";
  const auto tok = parse_tokenizer(file, "w.json");
  CHECK(tok->kind() == "wordlevel");
  CHECK(tok->encode("aba") == std::vector<int32_t>{2});
  CHECK(tok->encode("ab") == std::vector<int32_t>{3});
  CHECK(tok->decode(std::vector<int32_t>{2, 0, 1}) == "aba a b");
  // No unk_token in the vocabulary: tokenizers fails at encode ("Missing [UNK] token"), and so does gtpo.
  const auto strict = parse_tokenizer(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}}})", "s.json");
  CHECK(strict->encode("a") == std::vector<int32_t>{0});
  CHECK_THROWS_WITH(strict->encode("zz"), Contains("'zz' is not in the vocabulary") && Contains("'<unk>'"));
  // gtpo's own char files still load as the char tokenizer.
  CharTokenizer chars("ab");
  CHECK(parse_tokenizer(chars.to_json().dump(), "c.json")->kind() == "char");
}

TEST_CASE("saving over an unwritable path is an error", "[tokenizer]") {
  CHECK_THROWS_WITH(make_byte_tokenizer(259)->save("/nonexistent-dir/x/tokenizer.json"),
                    Contains("/nonexistent-dir/x/tokenizer.json.tmp"));
}
