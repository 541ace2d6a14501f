// gtpo score: per-token log-probs and entropies of given sequences under a checkpoint.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/args.h"
#include "apps/checkpoint_input.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "model/checkpoint.h"
#include "model/scoring.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    checkpoint_flag(),
    {"--in", true, "input JSONL: {\"tokens\": [ids], \"prompt_len\": k} per line (required)"},
    {"--out", true, "output JSONL: {\"logprobs\": [...], \"entropies\": [...]} per line (required)"},
    {"--temperature", true, "temperature of the scored distribution (default: the run's sampler.temperature, else 1)"},
    threads_flag(),
    device_flag("cpu")};
}  // namespace

int run_score(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo score --checkpoint DIR|RUN_DIR --in IN.jsonl --out OUT.jsonl [--temperature T]",
          "For each line, the log-prob of token j given tokens < j and the full-vocabulary entropy\n"
          "of that distribution, for positions prompt_len .. len-1, computed by the same fused\n"
          "kernel the trainer and the sampler use."))
    return 0;
  args.reject_unused("score", false, false);
  const std::string in_path = args.require("--in"), out_path = args.require("--out");
  CheckpointInput input = load_checkpoint_input(args, "score");
  model::LoadedModel& loaded = input.loaded;
  const double run_temperature =
      input.run_config && input.run_config->sampler.temperature > 0 ? input.run_config->sampler.temperature : 1.0;
  const float temperature = static_cast<float>(args.get_double("--temperature", run_temperature));
  GTPO_CHECK(temperature > 0.0f, "score: --temperature must be positive, got ", temperature);
  const model::Transformer& m = *loaded.model;
  const int64_t V = m.config().vocab_size;
  io::check_input_file(in_path, io::kMaxInputBytes, "score --in");
  std::ifstream in(in_path);
  GTPO_CHECK(in.good(), "score: cannot open ", in_path);
  std::ostringstream out;
  std::string line;
  int64_t line_no = 0, scored = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = in_path + ":" + std::to_string(line_no);
    nlohmann::json j = io::parse_json_or_fail(line, where + ": invalid JSON: ");
    GTPO_CHECK(j.is_object() && j.contains("tokens") && j["tokens"].is_array(), where,
               ": expected an object with a \"tokens\" array");
    GTPO_CHECK(j.contains("prompt_len") && j["prompt_len"].is_number_integer(), where,
               ": expected an integer \"prompt_len\"");
    std::vector<int32_t> tokens;
    for (const auto& t : j["tokens"]) {
      GTPO_CHECK(t.is_number_integer(), where, ": tokens must be integers");
      const int64_t id = t.get<int64_t>();
      GTPO_CHECK(id >= 0 && id < V, where, ": token id ", id, " outside [0, ", V, ")");
      tokens.push_back(static_cast<int32_t>(id));
    }
    const int64_t T = static_cast<int64_t>(tokens.size()), k = j["prompt_len"].get<int64_t>();
    GTPO_CHECK(k >= 1 && k <= T, where, ": prompt_len must be in [1, ", T, "], got ", k);
    GTPO_CHECK(T <= m.config().max_position_embeddings, where, ": ", T, " tokens exceed max_position_embeddings ",
               m.config().max_position_embeddings);
    const model::TokenScores scores = model::score_tokens(m, tokens, k, temperature);
    const nlohmann::json result = {{"logprobs", scores.logprobs}, {"entropies", scores.entropies}};
    out << result.dump() << "\n";
    ++scored;
  }
  io::write_file_atomic(out_path, out.str());
  std::fprintf(stderr, "scored %lld sequences -> %s\n", static_cast<long long>(scored), out_path.c_str());
  return 0;
}

}  // namespace gtpo::apps
