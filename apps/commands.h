// The gtpo subcommands. Each takes argv with argv[0] = the subcommand name and returns an exit code.
#pragma once

namespace gtpo::apps {

int run_advantages(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_init(int argc, char** argv);
int run_probe(int argc, char** argv);
int run_export(int argc, char** argv);
int run_score(int argc, char** argv);
int run_sample(int argc, char** argv);
int run_sft(int argc, char** argv);
int run_train(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_report(int argc, char** argv);
int run_tokenize(int argc, char** argv);

}  // namespace gtpo::apps
