// gtpo advantages on small JSONL files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/commands.h"

using nlohmann::json;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

struct Run {
  int code = 0;
  std::string out, err;
};

// Calls run_advantages with the given arguments, capturing stdout and stderr.
Run run(std::vector<std::string> args) {
  args.insert(args.begin(), "advantages");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  Run r;
  r.code = gtpo::apps::run_advantages(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("gtpo_test_advantages_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = temp_dir() / name;
  std::ofstream(p) << text;
  return p;
}

std::vector<json> read_jsonl(const fs::path& p) {
  std::vector<json> lines;
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line)) lines.push_back(json::parse(line));
  return lines;
}

const char* kSpecRollouts =
    R"({"group": "q1", "correct": true, "entropies": [2.0, 0.5, 1.0], "truncated": false}
{"group": "q1", "correct": true, "entropies": [0.5, 1.5]}
{"group": "q1", "correct": false, "entropies": [0.2, 1.0, 0.4]}

{"group": "q1", "correct": false, "entropies": [1.0, 0.5], "length": 2}
{"group": "q2", "correct": true, "entropies": [1.0]}
)";

}  // namespace

TEST_CASE("advantages command: gtpo on the spec vector, per-token shaped rewards, same order") {
  const fs::path in = write("spec.jsonl", kSpecRollouts);
  const fs::path out = temp_dir() / "spec_out.jsonl";
  const fs::path diag = temp_dir() / "spec_diag.json";
  const Run r = run({"--algo", "gtpo", "rl.overlong=none", "--in", in.string(), "--out=" + out.string(),
                     "--diagnostics", diag.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto lines = read_jsonl(out);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0]["group"] == "q1");
  CHECK(lines[0]["shaped"][0].get<double>() == Approx(1.16).margin(1e-4));
  CHECK(lines[0]["advantages"][0].get<double>() == Approx(1.0535).margin(1e-4));
  CHECK(lines[3]["advantages"][1].get<double>() == Approx(-1.0293).margin(1e-4));
  CHECK(lines[0]["loss_mask"] == json::array({1, 1, 1}));
  CHECK(lines[0]["dropped"] == false);
  // q2 is a group of one: dropped by gtpo's default dynamic sampling.
  CHECK(lines[4]["group"] == "q2");
  CHECK(lines[4]["dropped"] == true);
  CHECK(lines[4]["shaped"].is_null());
  CHECK(lines[4]["advantages"] == json::array({0.0}));
  const json summary = json::parse(r.out);
  CHECK(summary["dropped_groups"] == json::array({"q2"}));
  CHECK(summary["responses"] == 5);
  const json d = json::parse(std::ifstream(diag));
  CHECK(d["d_profile"] == json::array({2, 2, 1}));
  CHECK(d["config"]["rl.overlong"] == "none");
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(temp_dir())) CHECK_THAT(e.path().string(), !Contains(".tmp."));
}

TEST_CASE("advantages command: sequence-level algorithms write one shaped number") {
  const fs::path in = write("seq.jsonl", kSpecRollouts);
  const fs::path out = temp_dir() / "seq_out.jsonl";
  REQUIRE(run({"--algo", "grpo_s", "rl.overlong=none", "rl.dynamic_sampling=false", "--in", in.string(), "--out",
               out.string()})
              .code == 0);
  const auto lines = read_jsonl(out);
  CHECK(lines[0]["shaped"].get<double>() == Approx(1.1077).margin(1e-4));
  CHECK(lines[0]["seq_advantage"].get<double>() == Approx(1.0069).margin(1e-4));
  CHECK(lines[4]["shaped"].get<double>() == Approx(1.1));
  CHECK(lines[4]["advantages"] == json::array({0.0}));

  // dapo needs L_max for its soft overlong punishment.
  const Run r = run({"--algo", "dapo", "--in", in.string(), "--out", out.string()});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("sampler.max_new_tokens"));
  CHECK(run({"--algo", "dapo", "sampler.max_new_tokens=4", "rl.overlong_buffer=2", "--in", in.string(), "--out",
             out.string()})
            .code == 0);
  CHECK(read_jsonl(out)[0]["shaped"].get<double>() == Approx(0.5));  // +1, length 3 on the ramp (2, 4]: −1/2
  CHECK(read_jsonl(out)[1]["shaped"].get<double>() == Approx(1.0));  // length 2: no penalty
}

TEST_CASE("advantages command: the methods GTPO is compared with, with their own keys") {
  const fs::path in = write("methods.jsonl", kSpecRollouts);
  const fs::path out = temp_dir() / "methods_out.jsonl";
  // entropy_adv: GRPO's ±0.999998 plus min(0.4·H, 0.999998/4) on each token.
  Run r = run({"--algo", "entropy_adv", "entropy_adv.kappa=4", "--in", in.string(), "--out", out.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<json> lines = read_jsonl(out);
  const std::vector<double> want = {1.249998, 1.199998, 1.249998};
  for (size_t t = 0; t < want.size(); ++t)
    CHECK(lines[0]["advantages"][t].get<double>() == Approx(want[t]).margin(1e-5));
  CHECK(lines[2]["advantages"][0].get<double>() == Approx(-0.999998 + 0.08).margin(1e-5));
  // gspo's loss is over sequences: its lines carry seq_advantage.
  REQUIRE(run({"--algo", "gspo", "--in", in.string(), "--out", out.string()}).code == 0);
  lines = read_jsonl(out);
  CHECK(lines[0]["seq_advantage"].get<double>() == Approx(0.999998).margin(1e-5));
  // A bad value of a method's key names the key.
  r = run({"--algo", "entropy_adv", "entropy_adv.kappa=1", "--in", in.string(), "--out", out.string()});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("entropy_adv.kappa"));
}

TEST_CASE("advantages command: usage errors") {
  const fs::path in = write("ok.jsonl", kSpecRollouts);
  const std::string out = (temp_dir() / "x.jsonl").string();
  Run r = run({"--in", in.string(), "--out", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("missing --algo"));
  r = run({"--algo", "gtpo", "--out", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("missing --in"));
  r = run({"--algo", "gtpo", "--in", in.string()});
  CHECK_THAT(r.err, Contains("missing --out"));
  r = run({"--algo", "ppo", "--in", in.string(), "--out", out});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("unknown algorithm 'ppo'") && Contains("gtpo"));
  r = run({"--algo", "gtpo", "gtpo.alpha9=1", "--in", in.string(), "--out", out});
  CHECK_THAT(r.err, Contains("unknown option 'gtpo.alpha9'") && Contains("gtpo.alpha1"));
  r = run({"--algo", "gtpo", "--bogus", "--in", in.string(), "--out", out});
  CHECK_THAT(r.err, Contains("unknown option '--bogus'"));
  r = run({"--algo", "gtpo", "--in", (temp_dir() / "missing.jsonl").string(), "--out", out});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("missing.jsonl") && Contains("cannot open"));
  r = run({"--help"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("usage: gtpo advantages") && Contains("dapo_forking") && Contains("gtpo.adv_norm"));
}

TEST_CASE("advantages command: malformed lines name the file, line and problem") {
  const std::string out = (temp_dir() / "bad_out.jsonl").string();
  const std::string good = R"({"group": "q", "correct": true, "entropies": [1.0]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "invalid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {R"({"correct": true, "entropies": [1]})", "missing \"group\""},
      {R"({"group": "q", "entropies": [1]})", "missing \"correct\""},
      {R"({"group": "q", "correct": "yes", "entropies": [1]})", "\"correct\" must be true or false"},
      {R"({"group": "q", "correct": true})", "missing \"entropies\""},
      {R"({"group": "q", "correct": true, "entropies": [1, "x"]})", "entropies[1] must be a number"},
      {R"({"group": "q", "correct": true, "entropies": 3})", "\"entropies\" must be an array"},
      {R"({"group": "q", "correct": true, "entropies": [1], "length": -1})", "\"length\" must be a non-negative"},
      {R"({"group": "q", "correct": true, "entropies": [1, 2], "length": 3})", "length 3 but 2 entropies"},
      {R"({"group": "q", "correct": true, "entropies": [1, 1e300]})", "position 1"},
      {R"({"group": "q", "correct": true, "entropies": [1, -2]})", ">= 0"},
      {R"({"group": 1.5, "correct": true, "entropies": [1]})", "\"group\" must be a string or an integer"},
      {R"({"group": "q", "correct": true, "length": 2})", "needs one entropy per token"},
      // Beyond double's range: nlohmann's out_of_range, once an "internal error" with neither file nor line.
      {R"({"group": "q", "correct": true, "entropies": [1e999]})", "invalid JSON: number overflow parsing '1e999'"},
      {R"({"group": "q", "correct": true, "entropies": [1], "length": -1e400})", "number overflow"},
  };
  for (const auto& [line, problem] : cases) {
    INFO(line);
    const fs::path in = write("bad.jsonl", good + "\n\n" + line + "\n");
    const Run r = run({"--algo", "gtpo", "--in", in.string(), "--out", out});
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Contains(in.string() + ":3") && Contains(problem) && !Contains("internal error") &&
                          !Contains("json.exception"));
  }
  CHECK_FALSE(fs::exists(out));
  const fs::path empty = write("empty.jsonl", "\n");
  CHECK_THAT(run({"--algo", "gtpo", "--in", empty.string(), "--out", out}).err, Contains("no rollouts"));
}

TEST_CASE("advantages command: integer group ids are echoed, bare lengths work for grpo") {
  const fs::path in = write("ints.jsonl", R"({"group": 7, "correct": true, "length": 3}
{"group": 7, "correct": false, "length": 2}
)");
  const fs::path out = temp_dir() / "ints_out.jsonl";
  const Run r = run({"--algo", "grpo", "--in", in.string(), "--out", out.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto lines = read_jsonl(out);
  CHECK(lines[0]["group"] == 7);
  CHECK(lines[0]["advantages"].size() == 3);
  CHECK(lines[0]["advantages"][0].get<double>() == Approx(1.0).margin(1e-5));
  CHECK(lines[1]["shaped"].get<double>() == 0.0);
  CHECK(json::parse(r.out)["entropy_adv_corr"].is_null());
}
