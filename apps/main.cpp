// gtpo: the command line. It only wires the layers together; every command lives in its own file.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "rl/math/algorithm_registry.h"
#include "runtime/config_codec.h"
#include "runtime/error.h"

namespace {

struct Command {
  const char* name;
  std::string summary;
  int (*run)(int, char**);
};

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"init", "write a freshly initialised model checkpoint", gtpo::apps::run_init},
      {"export", "write a checkpoint as a clean Hugging Face model directory", gtpo::apps::run_export},
      {"sample", "grouped sampling from a checkpoint with per-token log-probs and entropies",
       gtpo::apps::run_sample},
      {"score", "per-token log-probs and entropies of given sequences", gtpo::apps::run_score},
      {"sft", "supervised warm start on reference solutions; writes a model checkpoint", gtpo::apps::run_sft},
      {"train",
       "SFT warm start (optional) then RL with one of " + std::to_string(gtpo::rl::all_algorithms().size()) +
           " algorithms: gtpo, grpo_s and what they are compared with (train --help lists them)",
       gtpo::apps::run_train},
      {"eval", "greedy accuracy, mean@k and pass@k of a checkpoint", gtpo::apps::run_eval},
      {"probe",
       "can these methods be told apart here? entropy, mixed groups, gradient cosines vs a noise floor",
       gtpo::apps::run_probe},
      {"advantages", "shaped rewards and advantages for your own rollouts (JSONL in, JSONL out)",
       gtpo::apps::run_advantages},
      {"report", "one self-contained HTML page of one or several runs (curves, tokens, GTPO math); --csv",
       gtpo::apps::run_report},
      {"tokenize", "text <-> ids with a tokenizer.json as Hugging Face tokenizers does (JSONL in, JSONL out)",
       gtpo::apps::run_tokenize},
      {"bench", "benchmarks side by side with scripts/bench/torch_bench.py (train, rollout, sgemm, rlstep)",
       gtpo::apps::run_bench},
  };
  return table;
}

void print_usage() {
  std::printf(
      "gtpo: reinforcement learning of small language models with token- and sequence-level entropy "
      "shaping\n\n"
      "usage: gtpo COMMAND [options]      (gtpo COMMAND --help for a command's options; gtpo --version)\n\n"
      "commands:\n");
  for (const Command& c : commands()) std::printf("  %-12s %s\n", c.name, c.summary.c_str());
}

// The version and what this binary was built with (a run's behaviour depends on both).
void print_version() {
  std::printf("gtpo %s\nbackends: cpu%s\ndata-parallel ranks (mpirun): %s\n", GTPO_VERSION,
#ifdef GTPO_WITH_CUDA
              ", cuda",
#else
              " (no CUDA backend in this build)",
#endif
#ifdef GTPO_WITH_MPI
              "yes"
#else
              "no (built without MPI)"
#endif
  );
}

}  // namespace

int main(int argc, char** argv) {
  // libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it loads. Its default spins idle workers
  // for a long time, which on a 2-core machine with anything else running made training 10x slower
  // (measured: 26 s vs 3 s for 20 SFT steps); going to sleep at once (passive, spin count 0) instead made
  // every one of the hundreds of parallel regions per step pay a futex wake-up: -8% training and -25%
  // rollout throughput on a quiet machine. So, unless the user chose, restart once with the passive policy
  // and a short spin (20000 iterations, tens of microseconds) before sleeping.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    if (!std::getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "20000", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then carry on as we are
  }
  // A write past a file-size limit (ulimit -f) then fails with EFBIG, which every writer reports with the
  // file (a log line also with the last checkpoint), instead of SIGXFSZ killing gtpo without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc >= 2 && !std::strcmp(argv[1], "--version")) {
    print_version();
    return 0;
  }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  for (const Command& c : commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const gtpo::Error& e) {
      std::fprintf(stderr, "gtpo %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gtpo %s: internal error: %s\n", c.name, e.what());
      return 3;
    }
  }
  std::vector<std::string> names;
  for (const Command& c : commands()) names.push_back(c.name);
  std::fprintf(stderr, "gtpo: unknown command '%s'%s\n\n", argv[1],
               gtpo::config::did_you_mean(argv[1], names).c_str());
  print_usage();
  return 2;
}
