// Input that a library should refuse, refused with a clear error (exit status 1, the file named) and never a
// signal, a hang or an internal error: nesting 100,000 deep in every nested format gtpo reads, inputs that
// are not regular files, and train.out_dir paths that cannot be a directory. Each command runs as a child
// process, so that a crash is seen as one.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"

using Catch::Matchers::Contains;
using gtpo::testing::run_shell;
namespace fs = std::filesystem;

namespace {

constexpr int kDepth = 100'000;

std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// `gtpo ARGS` under a 60 s timeout: its exit status (124 when it hung) and output.
gtpo::testing::ShellResult run_gtpo_shell(const std::string& args) {
  return run_shell("OMP_WAIT_POLICY=passive timeout 60 " + gtpo::testing::gtpo_binary() + " " + args);
}

const std::string kFixtures = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures";
const std::string kModel =
    "model:\n  architecture: gpt2\n  hidden_size: 16\n  num_hidden_layers: 1\n  num_attention_heads: 2\n"
    "  max_position_embeddings: 64\n";

}  // namespace

TEST_CASE(
    "input limits: nesting 100,000 deep in JSON, tokenizer.json, config.json, Jinja and YAML is a clear "
    "error",
    "[apps][input-limits]") {
  const std::string dir = gtpo::testing::fresh_temp_dir("input_depth");
  const std::string deep_array = repeat("[", kDepth) + repeat("]", kDepth);
  // A JSONL task file whose row carries a deep value (the row is kept and written out again).
  gtpo::io::write_file_atomic(dir + "/deep.jsonl",
                              "{\"prompt\": \"1+1\", \"answer\": \"2\", \"x\": " + deep_array + "}\n");
  gtpo::io::write_file_atomic(dir + "/run.yaml", kModel + "task:\n  train_file: " + dir +
                                                     "/deep.jsonl\n  test_file: " + dir +
                                                     "/deep.jsonl\ntrain:\n  steps: 1\n");
  auto r = run_gtpo_shell("train " + dir + "/run.yaml train.out_dir=" + dir + "/run");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("deep.jsonl:1") && Contains("nested deeper than 512"));

  // tokenizer.json with a Sequence normalizer nested 100,000 deep (HF tokenizers refuses it too).
  const std::string tokenizer = gtpo::io::read_file(kFixtures + "/tokenizers/gpt2/tokenizer.json");
  const std::string nested = repeat("{\"type\": \"Sequence\", \"normalizers\": [", kDepth) +
                             "{\"type\": \"Lowercase\"}" + repeat("]}", kDepth);
  const std::size_t at = tokenizer.find("\"normalizer\":");
  REQUIRE(at != std::string::npos);
  const std::size_t value = tokenizer.find_first_not_of(" ", at + 13),
                    end = tokenizer.find_first_of(",\n", value);
  fs::create_directories(dir + "/tok");
  gtpo::io::write_file_atomic(dir + "/tok/tokenizer.json",
                              tokenizer.substr(0, value) + nested + tokenizer.substr(end));
  r = run_gtpo_shell("tokenize --tokenizer " + dir + "/tok --text hello");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("tok/tokenizer.json") && Contains("nested deeper than 512"));

  // A checkpoint's config.json.
  fs::copy(kFixtures + "/hf_models/gpt2", dir + "/ckpt", fs::copy_options::recursive);
  fs::remove(dir + "/ckpt/config.yaml");
  gtpo::io::write_file_atomic(dir + "/ckpt/config.json",
                              "{\"model_type\": \"gpt2\", \"x\": " + deep_array + "}");
  r = run_gtpo_shell("sample --checkpoint " + dir + "/ckpt --prompt-tokens 1,2");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("config.json") && Contains("nested deeper than 512"));

  // A chat template nested 100,000 deep, and a YAML config.
  fs::create_directories(dir + "/jinja");
  fs::copy_file(kFixtures + "/tokenizers/gpt2/tokenizer.json", dir + "/jinja/tokenizer.json");
  gtpo::io::write_file_atomic(dir + "/jinja/chat_template.jinja",
                              "{{ " + repeat("(", kDepth) + "1" + repeat(")", kDepth) + " }}");
  r = run_gtpo_shell("tokenize --tokenizer " + dir + "/jinja --chat --text " +
                     quoted("[{\"role\": \"user\", \"content\": \"hi\"}]"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("chat_template.jinja") && Contains("deeper than"));
  gtpo::io::write_file_atomic(dir + "/deep.yaml", "model: " + deep_array + "\n");
  r = run_gtpo_shell("train " + dir + "/deep.yaml");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("deep.yaml"));
  fs::remove_all(dir);
}

TEST_CASE("input limits: /dev/zero, a FIFO and a directory as an input are clear errors, at once",
          "[apps][input-limits]") {
  const std::string dir = gtpo::testing::fresh_temp_dir("input_special");
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  const std::string tokenizer = kFixtures + "/tokenizers/gpt2";
  struct Case {
    std::string args, named, kind;
  };
  const Case cases[] = {
      {"train /dev/zero", "config '/dev/zero'", "a character device"},
      {"train " + dir + "/fifo", "config '" + dir + "/fifo'", "a FIFO"},
      {"train " + dir, "config '" + dir + "'", "a directory"},
      {"tokenize --tokenizer " + tokenizer + " --in /dev/zero --out " + dir + "/o.jsonl", "JSONL '/dev/zero'",
       "a character device"},
      {"tokenize --tokenizer " + tokenizer + " --in " + dir + "/fifo --out " + dir + "/o.jsonl",
       "JSONL '" + dir + "/fifo'", "a FIFO"},
      {"tokenize --tokenizer /dev/zero --text hi", "tokenizer file '/dev/zero'", "a character device"},
      {"advantages --algo grpo --in /dev/zero --out " + dir + "/a.jsonl", "'/dev/zero'",
       "a character device"},
  };
  for (const Case& c : cases) {
    const auto r = run_gtpo_shell(c.args);
    INFO("gtpo " << c.args << "\n" << r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains(c.named) && Contains(c.kind) && Contains("not a regular file"));
  }
  fs::remove_all(dir);
}

TEST_CASE("input limits: a train.out_dir that cannot be a directory is a clear error, not an internal one",
          "[apps][input-limits]") {
  const std::string dir = gtpo::testing::fresh_temp_dir("input_out_dir");
  gtpo::io::write_file_atomic(dir + "/afile", "x");
  gtpo::io::write_file_atomic(dir + "/run.yaml", kModel + "train:\n  steps: 1\n");
  const std::string too_long = dir + "/" + std::string(5000, 'x');
  for (const std::string& out :
       {dir + "/afile/run", std::string("/proc/gtpo-run"), std::string(), too_long}) {
    const auto r = run_gtpo_shell("train " + dir + "/run.yaml " + quoted("train.out_dir=" + out));
    INFO("train.out_dir=" << out.substr(0, 80) << "\n" << r.output.substr(0, 2000));
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains("train.out_dir") && !Contains("internal error"));
  }
  fs::remove_all(dir);
}

// nlohmann's parser takes a NUL byte for the end of its input and yaml-cpp reads one as an escape: JSON or
// YAML followed by NUL and garbage is an error naming the file and the byte, in every JSON gtpo reads. And
// a checkpoint's config.json is held to the 256 MiB limit of configs (a sparse 300 MiB file: no disk used).
TEST_CASE(
    "input limits: JSON followed by a NUL byte and garbage, and a 300 MiB config.json, are clear errors",
    "[apps][input-limits]") {
  const std::string dir = gtpo::testing::fresh_temp_dir("input_nul");
  const std::string garbage = std::string("\0garbage", 8);
  fs::create_directories(dir + "/tok");
  gtpo::io::write_file_atomic(dir + "/tok/tokenizer.json",
                              gtpo::io::read_file(kFixtures + "/tokenizers/gpt2/tokenizer.json") + garbage);
  gtpo::io::write_file_atomic(dir + "/rows.jsonl",
                              "{\"prompt\": \"1+1\", \"answer\": \"2\"}" + garbage + "\n");
  gtpo::io::write_file_atomic(dir + "/run.json", "{\"train\": {\"steps\": 1}}" + garbage);
  gtpo::io::write_file_atomic(dir + "/reward.py",
                              "import json, sys\nfor line in sys.stdin:\n"
                              "    print(json.dumps({'id': json.loads(line)['id'], 'reward': 0}) + '\\0x', "
                              "flush=True)\n");
  gtpo::io::write_file_atomic(dir + "/reward.yaml",
                              kModel +
                                  "sampler: {max_new_tokens: 4, group_size: 2}\ntrain: {steps: 1, "
                                  "prompts_per_step: 1}\neval: {every: 0}\nreward:\n  functions:\n"
                                  "    - {name: r, weight: 1, command: \"python3 " +
                                  dir + "/reward.py\"}\n");
  fs::copy(kFixtures + "/hf_models/gpt2", dir + "/ckpt", fs::copy_options::recursive);
  fs::remove(dir + "/ckpt/config.yaml");
  fs::copy(kFixtures + "/hf_models/gpt2", dir + "/big", fs::copy_options::recursive);
  fs::remove(dir + "/big/config.yaml");
  gtpo::io::write_file_atomic(dir + "/ckpt/config.json",
                              gtpo::io::read_file(dir + "/ckpt/config.json") + garbage);
  fs::resize_file(dir + "/big/config.json", std::uintmax_t{300} << 20);  // JSON, then zero bytes
  struct Case {
    std::string args, named, what;
  };
  const Case cases[] = {
      {"tokenize --tokenizer " + dir + "/tok --text hi", "tok/tokenizer.json", "NUL byte"},
      {"tokenize --tokenizer " + kFixtures + "/tokenizers/gpt2 --in " + dir + "/rows.jsonl --out " + dir +
           "/o.jsonl",
       "rows.jsonl:1", "NUL byte"},
      {"train " + dir + "/run.json train.out_dir=" + dir + "/run1", "run.json:1:24", "NUL byte"},
      {"train " + dir + "/reward.yaml train.out_dir=" + dir + "/run2", "reply 1 of 2", "NUL byte"},
      {"sample --checkpoint " + dir + "/ckpt --prompt-tokens 1,2", "config.json", "NUL byte"},
      {"sample --checkpoint " + dir + "/big --prompt-tokens 1,2", "config.json",
       "300 MiB, over the limit of 256 MiB"},
  };
  for (const Case& c : cases) {
    const auto r = run_gtpo_shell(c.args);
    INFO("gtpo " << c.args << "\n" << r.output.substr(0, 3000));
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains(c.named) && Contains(c.what));
  }
  fs::remove_all(dir);
}
