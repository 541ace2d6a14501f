// The transformers side of checks on directories gtpo reads and writes: gtpo score and
// scripts/reference/hf_check_dir.py (AutoModelForCausalLM.from_pretrained) on the same token sequences.
// Needs GTPO_HF_PYTHON (scripts/test.sh sets it; scripts/reference/hf_python.sh makes one).
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"

namespace gtpo::testing {

inline std::vector<std::vector<double>> read_logprobs(const std::string& path) {
  std::vector<std::vector<double>> out;
  std::istringstream lines(io::read_file(path));
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line)["logprobs"].get<std::vector<double>>());
  return out;
}

// gtpo score and transformers on the same sequences of DIR; returns max |difference|.
inline double gtpo_vs_transformers(const std::string& dir, const std::string& work) {
  const char* python = std::getenv("GTPO_HF_PYTHON");
  INFO("GTPO_HF_PYTHON is not set: this test runs transformers; set it to the interpreter "
       "scripts/reference/hf_python.sh prints (scripts/test.sh does)");
  REQUIRE(python != nullptr);
  REQUIRE(std::string(python) != "");
  std::string in;
  for (int s = 0; s < 3; ++s) {
    nlohmann::json tokens = nlohmann::json::array();
    for (int i = 0; i < 30 + 5 * s; ++i) tokens.push_back((i * 53 + 7 * s + 3) % 250);
    in += nlohmann::json({{"tokens", tokens}, {"prompt_len", 1 + 4 * s}}).dump() + "\n";
  }
  io::write_file_atomic(work + "/in.jsonl", in);
  REQUIRE(call_command({"score", "--checkpoint", dir, "--in", work + "/in.jsonl", "--out", work + "/gtpo.jsonl"},
                       apps::run_score) == 0);
  const std::string command = std::string(python) + " " + GTPO_SOURCE_DIR + "/scripts/reference/hf_check_dir.py " +
                              dir + " " + work + "/in.jsonl " + work + "/hf.jsonl 2> " + work + "/hf.log";
  const int rc = std::system(command.c_str());
  INFO("transformers failed on " << dir << ":\n" << (std::filesystem::exists(work + "/hf.log") ? io::read_file(work + "/hf.log") : ""));
  REQUIRE(rc == 0);
  const auto a = read_logprobs(work + "/gtpo.jsonl"), b = read_logprobs(work + "/hf.jsonl");
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == a.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].size() == b[i].size());
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::abs(a[i][j] - b[i][j]));
  }
  return worst;
}


}  // namespace gtpo::testing
