// `gtpo tokenize` against transformers: a directory gtpo saved (tokenizer.json + tokenizer_config.json)
// must load with AutoTokenizer.from_pretrained and give the ids gtpo gives, for gtpo's byte tokenizer and a
// Qwen2-layout tokenizer trained by `tokenizers`. Needs GTPO_HF_PYTHON (scripts/test.sh
// sets it; scripts/reference/hf_python.sh makes one).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_config.h"
#include "tests/support/commands.h"

namespace {

const std::vector<std::string> kTexts = {
    "Q: 12+7=? A: 19 #### 19",
    "<bos>hello<eos> world <pad>",
    "<|im_start|>user\nWhat is 1234 + 5678?<|im_end|>\n<|im_start|>assistant\n",
    "Ünïcödé — “quotes” … 数学 😀  double  space\n\ttab",
    "text<|endoftext|>more <think>x</think> y",
    "",
};

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

void compare_with_transformers(const std::string& dir, const std::string& work,
                               const std::vector<std::string>& texts = kTexts) {
  const char* python = std::getenv("GTPO_HF_PYTHON");
  if (!python || !*python) {
    FAIL("GTPO_HF_PYTHON is not set: this test runs transformers; export "
         "GTPO_HF_PYTHON=$(scripts/reference/hf_python.sh) (scripts/test.sh does)");
  }
  const std::string in = work + "/in.jsonl", ours = work + "/gtpo.jsonl", theirs = work + "/hf.jsonl";
  {
    std::ofstream f(in);
    for (const std::string& t : texts) f << nlohmann::json{{"text", t}}.dump() << "\n";
  }
  REQUIRE(gtpo::testing::call_command({"tokenize", "--tokenizer", dir, "--in", in, "--out", ours},
                                      gtpo::apps::run_tokenize) == 0);
  const std::string cmd = std::string("'") + python + "' '" + GTPO_SOURCE_DIR +
                          "/scripts/reference/hf_auto_tokenizer.py' '" + dir + "' '" + in + "' '" + theirs + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto a = read_lines(ours), b = read_lines(theirs);
  REQUIRE(a.size() == texts.size());
  REQUIRE(b.size() == texts.size());
  const auto tok = gtpo::data::load_tokenizer(dir);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    INFO(dir << ": '" << texts[i] << "'");
    CHECK(a[i]["ids"] == b[i]["ids"]);
    CHECK(b[i]["vocab"] == tok->vocab_size());  // transformers added no token of its own
    std::vector<int32_t> ids = b[i]["ids"].get<std::vector<int32_t>>();
    CHECK(tok->decode(ids) == b[i]["text"].get<std::string>());
  }
}

}  // namespace

TEST_CASE("tokenize: AutoTokenizer on gtpo-saved directories gives gtpo's ids", "[tokenize][hf-python]") {
  const std::string work = gtpo::testing::fresh_temp_dir("tokenize_hf");
  auto save_dir = [&](const gtpo::data::Tokenizer& tok, const std::string& name) {
    const std::string dir = work + "/" + name;
    std::filesystem::create_directories(dir);
    tok.save(dir + "/tokenizer.json");
    gtpo::data::write_tokenizer_config(tok, dir + "/tokenizer_config.json", 512);
    return dir;
  };
  const auto byte = gtpo::data::make_byte_tokenizer(300);
  const std::string qwen_src = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2";
  const auto qwen = gtpo::data::load_tokenizer(qwen_src);
  for (const std::string& dir : {save_dir(*byte, "byte"), save_dir(*qwen, "qwen2")}) {
    compare_with_transformers(dir, work);
  }
}

TEST_CASE("tokenize: the tokenizer class's add_bos_token / add_eos_token as transformers applies them",
          "[tokenize][hf-python]") {
  // The Llama-2 layout (its post-processor adds <s>) under classes that replace the post-processor and one
  // that keeps it, named by tokenizer_config.json or, without one, by config.json's model_type; each
  // directory and a copy gtpo saves of it are encoded by gtpo tokenize and by AutoTokenizer.
  const std::string work = gtpo::testing::fresh_temp_dir("tokenize_hf_class");
  const std::string fixture = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/tokenizers/llama2";
  const std::string roles = R"("bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>")";
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"llama_eos_only",
       R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, )" +
           roles + "}"},
      {"llama_slow_name", R"({"tokenizer_class": "LlamaTokenizer", "add_eos_token": true, )" + roles + "}"},
      {"neox_defaults", R"({"tokenizer_class": "GPTNeoXTokenizerFast", )" + roles + "}"},
      {"generic",
       R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false, "add_eos_token": true, )" +
           roles + "}"},
      {"model_type_llama", ""},
  };
  for (const auto& [name, config] : variants) {
    const std::string dir = work + "/" + name, copy = work + "/" + name + "_saved";
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(fixture + "/tokenizer.json", dir + "/tokenizer.json");
    std::ofstream(dir + (config.empty() ? "/config.json" : "/tokenizer_config.json"))
        << (config.empty() ? std::string(R"({"model_type": "llama"})") : config);
    compare_with_transformers(dir, work);
    std::filesystem::create_directories(copy);
    const auto tok = gtpo::data::load_tokenizer(dir);
    tok->save(copy + "/tokenizer.json");
    gtpo::data::write_tokenizer_config(*tok, copy + "/tokenizer_config.json", 512);
    compare_with_transformers(copy, work);
  }
}

TEST_CASE("tokenize: Split regexes over texts longer than 16 KiB match transformers",
          "[tokenize][hf-python]") {
  // Past 16 KiB OnigRegex tries one start position at a time (so a slow pattern can be stopped); these
  // patterns see across positions (lookbehind, a 300-character lookahead, line anchors, multi-byte
  // characters, \G), over long gaps without a match.
  const std::string work = gtpo::testing::fresh_temp_dir("tokenize_hf_long");
  const std::string src = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/tokenizers/qwen2";
  auto j = nlohmann::json::parse(std::ifstream(src + "/tokenizer.json"));
  auto split = [](const std::string& regex) {
    return nlohmann::json{
        {"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
  };
  auto& steps = j["pre_tokenizer"]["pretokenizers"];
  steps = nlohmann::json::array({split("\\Gz+"), split("(?<=q)\\d+"), split("x(?=[^x]{300,400}y)"),
                                 split("^#|!$"), split("é+|😀"), steps[0], steps[1]});
  const std::string dir = work + "/split";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << j.dump();
  std::filesystem::copy_file(src + "/tokenizer_config.json", dir + "/tokenizer_config.json");
  const std::vector<std::string> pieces = {"a",   " ",   "q123", "é",       "x", "y",
                                           "\n#", "!\n", "😀",    "ab cd, ", "z"};
  std::vector<std::string> texts;
  uint32_t state = 7;
  for (int t = 0; t < 6; ++t) {
    std::string text = t % 2 ? "zzz" : "";
    while (text.size() < 17000 + 3000 * static_cast<std::size_t>(t)) {
      state = state * 1103515245u + 12345u;
      const std::string& piece = pieces[(state >> 16) % pieces.size()];
      const std::size_t repeat = (state >> 8) % 4 == 0 ? 1 + (state >> 4) % 700 : 1;  // long runs too
      for (std::size_t r = 0; r < repeat; ++r) text += piece;
    }
    texts.push_back(text);
  }
  compare_with_transformers(dir, work, texts);
}
