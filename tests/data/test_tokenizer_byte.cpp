#include <catch2/catch.hpp>

#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"
#include "test_tokenizer_util.h"

using gtpo::data::load_tokenizer;
using gtpo::data::make_byte_tokenizer;
using Catch::Matchers::Contains;

TEST_CASE("byte tokenizer: ids are bytes, then specials, then unused ids", "[tokenizer]") {
  const auto tok = make_byte_tokenizer(300);
  CHECK(tok->kind() == "byte");
  CHECK(tok->vocab_size() == 300);
  CHECK(tok->pad_id() == 256);
  CHECK(tok->bos_id() == 257);
  CHECK(tok->eos_id() == 258);
  CHECK(tok->encode(std::string("A\0\xff", 3)) == std::vector<int32_t>{65, 0, 255});
  CHECK(tok->decode(std::vector<int32_t>{72, 105, 258, 299}) == "Hi<eos><unused_40>");
  CHECK(tok->is_special(299));
  CHECK_FALSE(tok->is_special(255));
  CHECK(tok->token_text(10) == "\\n");
  CHECK(tok->token_text(0xff) == "\\xff");
  CHECK(tok->token_text(259) == "<unused_0>");
  CHECK_THROWS_WITH(tok->decode(std::vector<int32_t>{300}), Contains("token id 300") && Contains("vocabulary size 300"));
  CHECK(make_byte_tokenizer(259)->vocab_size() == 259);
  CHECK_THROWS_WITH(make_byte_tokenizer(258), Contains("vocab_size 258") && Contains("259"));
}

TEST_CASE("byte tokenizer: exact round trip of random bytes, and through a file", "[tokenizer]") {
  const auto tok = make_byte_tokenizer(512);
  std::mt19937 rng(2024);
  const std::string text = gtpo::data::test::random_bytes(rng, 10000);
  const auto ids = tok->encode(text);
  CHECK(ids.size() == text.size());
  CHECK(tok->decode(ids) == text);

  const std::string path = gtpo::data::test::scratch_path("byte.json");
  tok->save(path);
  const auto loaded = load_tokenizer(path);
  CHECK(loaded->kind() == "byte");
  CHECK(loaded->vocab_size() == 512);
  CHECK(loaded->eos_id() == 258);
  CHECK(loaded->encode(text) == ids);
}

// The vectors are Python's bytes.decode("utf-8", "replace"): one U+FFFD per maximal invalid subpart.
TEST_CASE("utf8_replace_invalid: invalid bytes become U+FFFD as Python's decode(errors=replace)",
          "[tokenizer]") {
  const std::string r = "\xEF\xBF\xBD";
  CHECK(gtpo::data::utf8_replace_invalid(std::string("a\xFF") + "b") == "a" + r + "b");
  CHECK(gtpo::data::utf8_replace_invalid("\xE2\x82") == r);  // a sequence cut short: one replacement
  CHECK(gtpo::data::utf8_replace_invalid("\xE2\x82x") == r + "x");
  CHECK(gtpo::data::utf8_replace_invalid("\xF0\x9F\x98") == r);
  CHECK(gtpo::data::utf8_replace_invalid("\xED\xA0\x80") == r + r + r);          // a surrogate: each byte
  CHECK(gtpo::data::utf8_replace_invalid("\xC0\xAF") == r + r);                  // overlong
  CHECK(gtpo::data::utf8_replace_invalid("\xF4\x90\x80\x80") == r + r + r + r);  // beyond U+10FFFF
  CHECK(gtpo::data::utf8_replace_invalid("\x80\x80") == r + r);
  CHECK(gtpo::data::utf8_replace_invalid("ok \xE2\x82\xAC") == "ok \xE2\x82\xAC");  // valid text is unchanged
  const auto bytes = make_byte_tokenizer(300);
  std::vector<int32_t> all;
  for (int b = 0; b < 256; ++b) all.push_back(b);
  CHECK(gtpo::data::utf8_valid(gtpo::data::utf8_replace_invalid(bytes->decode(all))));
}
