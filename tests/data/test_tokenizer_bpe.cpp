#include <catch2/catch.hpp>
#include <chrono>

#include "data/tokenizer/bpe_tokenizer.h"
#include "data/tokenizer/pretokenizer.h"
#include "runtime/error.h"
#include "test_tokenizer_util.h"

using gtpo::data::BpeTokenizer;
using gtpo::data::pretokenize;
using Catch::Matchers::Contains;

namespace {
std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : pretokenize(text)) out.emplace_back(p);
  return out;
}
const std::vector<std::string> kSpecials = {"<pad>", "<bos>", "<eos>"};
}  // namespace

TEST_CASE("pre-tokenizer follows GPT-2's pattern", "[tokenizer]") {
  using V = std::vector<std::string>;
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("it's I'll we've") == V{"it", "'s", " I", "'ll", " we", "'ve"});
  CHECK(split("a  b") == V{"a", " ", " b"});
  CHECK(split("a  ") == V{"a", "  "});
  CHECK(split("x\n\ny") == V{"x", "\n", "\n", "y"});
  CHECK(split("  \n  x") == V{"  \n ", " x"});
  CHECK(split("1,234.56!!") == V{"1", ",", "234", ".", "56", "!!"});
  CHECK(split(" 's") == V{" '", "s"});
  CHECK(split("''s") == V{"''", "s"});
  CHECK(split("caf\xc3\xa9 \xe6\x97\xa5") == V{"caf\xc3\xa9", " \xe6\x97\xa5"});
  CHECK(split("").empty());
  std::mt19937 rng(7);
  const std::string bytes = gtpo::data::test::random_bytes(rng, 5000);
  std::string joined;
  for (auto p : pretokenize(bytes)) {
    REQUIRE(!p.empty());
    joined += p;
  }
  CHECK(joined == bytes);
}

TEST_CASE("BPE training is deterministic and compresses the corpus", "[tokenizer]") {
  const std::string corpus = gtpo::data::test::sample_corpus(50);
  const BpeTokenizer a = BpeTokenizer::train(corpus, 400, kSpecials);
  const BpeTokenizer b = BpeTokenizer::train(corpus, 400, kSpecials);
  CHECK(a.merges() == b.merges());
  CHECK(a.vocab_size() == b.vocab_size());
  CHECK(a.vocab_size() <= 400);
  CHECK(a.merges().size() > 50);
  CHECK(a.kind() == "bpe");
  CHECK(a.pad_id() == 0);
  CHECK(a.bos_id() == 1);
  CHECK(a.eos_id() == 2);
  const auto ids = a.encode(corpus);
  CHECK(ids.size() * 3 < corpus.size());  // merges shrink the sequence a lot on the training text
  CHECK(a.decode(ids) == corpus);
  CHECK(ids == b.encode(corpus));
}

TEST_CASE("BPE stops when no pair repeats and validates its arguments", "[tokenizer]") {
  const BpeTokenizer tiny = BpeTokenizer::train("abab", 1000, {});
  CHECK(tiny.vocab_size() == 257);  // "ab" occurs twice in the one chunk "abab"; "ab"+"ab" only once
  CHECK(tiny.merges().size() == 1);
  CHECK(tiny.encode("abab").size() == 2);
  CHECK_THROWS_WITH(BpeTokenizer::train("abc", 200, {}), Contains("vocab_size 200"));
  CHECK_THROWS_WITH(BpeTokenizer::train("abc", 300, {"<a>", "<a>"}), Contains("repeated"));
}

TEST_CASE("BPE never learns a token spelled like a special token", "[tokenizer]") {
  const BpeTokenizer tok = BpeTokenizer::train(std::string(200, 'x') + " <eos> <eos> <eos>", 600, {"<eos>"});
  for (int32_t id = 1; id < tok.vocab_size(); ++id) CHECK(tok.decode(std::vector<int32_t>{id}) != "<eos>");
  CHECK(tok.decode(tok.encode("a <eos> b")) == "a <eos> b");
}

TEST_CASE("BPE round-trips arbitrary bytes exactly", "[tokenizer]") {
  const BpeTokenizer tok = BpeTokenizer::train(gtpo::data::test::sample_corpus(20), 500, kSpecials);
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    const std::string text = gtpo::data::test::random_bytes(rng, 1 + trial * 37);
    REQUIRE(tok.decode(tok.encode(text)) == text);
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  CHECK(tok.decode(tok.encode(all)) == all);
  CHECK(tok.decode(tok.encode(std::string("a\0b\0\0 c", 7))) == std::string("a\0b\0\0 c", 7));
  const std::string invalid_utf8 = "\xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc \xed\xa0\x80 caf\xc3\xa9";
  CHECK(tok.decode(tok.encode(invalid_utf8)) == invalid_utf8);
  CHECK(tok.encode("").empty());
}

TEST_CASE("BPE decode rejects ids out of range", "[tokenizer]") {
  const BpeTokenizer tok = BpeTokenizer::train("hello hello hello", 300, kSpecials);
  std::vector<int32_t> bad = {tok.vocab_size()};
  CHECK_THROWS_WITH(tok.decode(bad), Contains("token id " + std::to_string(tok.vocab_size())) &&
                                         Contains("vocabulary size " + std::to_string(tok.vocab_size())));
  CHECK_THROWS_AS(tok.token_text(-3), gtpo::Error);
  CHECK(tok.token_text(0) == "<pad>");
}

TEST_CASE("BPE training on a few MB takes seconds", "[tokenizer]") {
  // ~3 MB of varied text: the corpus paragraphs interleaved with seeded pseudo-words.
  std::mt19937 rng(3);
  std::string corpus = gtpo::data::test::sample_corpus(2000);
  std::uniform_int_distribution<int> letter('a', 'z'), len(1, 9);
  while (corpus.size() < 3'000'000) {
    corpus += ' ';
    for (int i = len(rng); i > 0; --i) corpus += static_cast<char>(letter(rng));
  }
  const auto start = std::chrono::steady_clock::now();
  const BpeTokenizer tok = BpeTokenizer::train(corpus, 2000, kSpecials);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("trained " << tok.merges().size() << " merges on " << corpus.size() << " bytes in " << seconds << " s");
  CHECK(tok.vocab_size() == 2000);
  CHECK(seconds < 30.0);
  const std::string sample = corpus.substr(1'000'000, 100'000);
  CHECK(tok.decode(tok.encode(sample)) == sample);
}
