#include <catch2/catch.hpp>

#include "data/tokenizer/char_tokenizer.h"
#include "runtime/error.h"
#include "test_tokenizer_util.h"

using gtpo::data::CharTokenizer;
using Catch::Matchers::Contains;

TEST_CASE("char tokenizer: layout, encode and decode", "[tokenizer]") {
  CharTokenizer tok("0123456789+-*= ");
  CHECK(tok.kind() == "char");
  CHECK(tok.vocab_size() == 18);
  CHECK(tok.pad_id() == 0);
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_id() == 2);
  const auto ids = tok.encode("12+3 = 15");
  CHECK(ids == std::vector<int32_t>{4, 5, 13, 6, 17, 16, 17, 4, 8});
  CHECK(tok.decode(ids) == "12+3 = 15");
  std::vector<int32_t> with_specials = {1, 4, 2, 0};
  CHECK(tok.decode(with_specials) == "<bos>1<eos><pad>");
  CHECK(tok.is_special(2));
  CHECK_FALSE(tok.is_special(3));
  CHECK(tok.token_text(17) == " ");
  CHECK(tok.encode("").empty());
}

TEST_CASE("char tokenizer: multi-byte UTF-8 characters are single tokens", "[tokenizer]") {
  CharTokenizer tok("a\xc3\xa9\xe2\x82\xac\n");  // a, é, €, newline
  const auto ids = tok.encode("\xe2\x82\xac" "a\n\xc3\xa9");
  CHECK(ids == std::vector<int32_t>{5, 3, 6, 4});
  CHECK(tok.decode(ids) == "\xe2\x82\xac" "a\n\xc3\xa9");
  CHECK(tok.token_text(6) == "\\n");
}

TEST_CASE("char tokenizer: unknown characters name the character and position", "[tokenizer]") {
  CharTokenizer tok("0123456789");
  CHECK_THROWS_WITH(tok.encode("12x4"), Contains("'x'") && Contains("U+0078") && Contains("byte offset 2") &&
                                            Contains("not in the vocabulary"));
  CHECK_THROWS_WITH(tok.encode("1\n"), Contains("'\\n'") && Contains("U+000A") && Contains("byte offset 1"));
  CHECK_THROWS_WITH(tok.encode("1\xc3\xa9"), Contains("U+00E9") && Contains("byte offset 1"));
  CHECK_THROWS_WITH(tok.encode("12\xff"), Contains("invalid UTF-8") && Contains("0xff") && Contains("byte offset 2"));
  CHECK_THROWS_AS(tok.encode("<eos>"), gtpo::Error);  // specials are never parsed from text
}

TEST_CASE("char tokenizer: bad ids and bad alphabets", "[tokenizer]") {
  CharTokenizer tok("ab");
  std::vector<int32_t> bad = {3, 5};
  CHECK_THROWS_WITH(tok.decode(bad), Contains("token id 5") && Contains("vocabulary size 5"));
  std::vector<int32_t> negative = {-1};
  CHECK_THROWS_WITH(tok.decode(negative), Contains("token id -1"));
  CHECK_THROWS_WITH(tok.token_text(9), Contains("token id 9"));
  CHECK_THROWS_WITH(CharTokenizer("aba"), Contains("repeats 'a'"));
  CHECK_THROWS_WITH(CharTokenizer(""), Contains("empty"));
  CHECK_THROWS_WITH(CharTokenizer("a\xff"), Contains("not valid UTF-8"));
}
