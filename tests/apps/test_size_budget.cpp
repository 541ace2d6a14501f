// scripts/size_budget.py and scripts/check_layers.py, which scripts/test.sh runs before it builds: the tree
// passes today, and a function or a folder over its cap, or an include across the floors, fails the check
// with a message naming it (on a scratch tree).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tests/support/child_process.h"
#include "tests/support/commands.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kScript = std::string(GTPO_SOURCE_DIR) + "/scripts/size_budget.py";

// A function whose braces are `lines` lines apart, counted as the script counts them; braces inside
// comments, strings and preprocessor lines must not confuse it.
std::string function_of(const std::string& name, int lines) {
  std::string body = "namespace n {\n#if defined(X)\n#endif\nint " + name + "(int x) {\n";
  for (int i = 0; i < lines - 3; ++i) body += "  x += 1;  // } {\n";
  return body + "  return x;\n}\n}  // namespace n\nconst char* s = \"}}}\";\n";
}

gtpo::testing::ShellResult budget(const std::string& root) {
  return gtpo::testing::run_shell("python3 '" + kScript + "' --root '" + root + "'");
}

gtpo::testing::ShellResult layers(const std::string& root) {
  return gtpo::testing::run_shell("python3 '" + std::string(GTPO_SOURCE_DIR) +
                                  "/scripts/check_layers.py' --root '" + root + "'");
}

}  // namespace

TEST_CASE("size budget: the tree fits, and a function or the production total over its cap fails, named",
          "[size-budget]") {
  const auto today = budget(GTPO_SOURCE_DIR);
  INFO(today.output);
  CHECK(today.code == 0);

  const std::string root = gtpo::testing::fresh_temp_dir("size_budget");
  fs::create_directories(root + "/rl");
  std::ofstream(root + "/rl/ok.cpp") << function_of("fits", 80);
  const auto fits = budget(root);
  INFO(fits.output);
  CHECK(fits.code == 0);

  std::ofstream(root + "/rl/long.cpp") << function_of("too_long", 81);
  const auto too_long = budget(root);
  CHECK(too_long.code == 1);
  CHECK_THAT(too_long.output, Contains("rl/long.cpp:4: too_long is 81 lines, over the cap of 80"));
  fs::remove(root + "/rl/long.cpp");

  // One cap for the production folders together: 60 + 50 lines pass a cap of 110 and fail one of 109.
  const std::string total_root = gtpo::testing::fresh_temp_dir("size_budget_total");
  for (const auto& [folder, lines] : {std::pair{"model", 60}, std::pair{"data", 50}}) {
    fs::create_directories(total_root + "/" + folder);
    std::ofstream big(total_root + "/" + folder + "/big.h");
    for (int i = 0; i < lines; ++i) big << "// line\n";
  }
  const auto at_cap =
      gtpo::testing::run_shell("python3 '" + kScript + "' --root '" + total_root + "' --production-cap 110");
  INFO(at_cap.output);
  CHECK(at_cap.code == 0);
  const auto over =
      gtpo::testing::run_shell("python3 '" + kScript + "' --root '" + total_root + "' --production-cap 109");
  CHECK(over.code == 1);
  CHECK_THAT(over.output,
             Contains("production (apps + data + model + rl + runtime) has 110 lines, over its cap of 109"));
}

TEST_CASE("size budget: --diff prints each production folder's lines against HEAD~1, or says no base",
          "[size-budget]") {
  const std::string root = gtpo::testing::fresh_temp_dir("size_budget_diff");
  const std::string git = "git -C '" + root + "' -c user.name=t -c user.email=t@t ";
  const auto write_lines = [&](const std::string& path, int lines) {
    fs::create_directories(fs::path(root + "/" + path).parent_path());
    std::ofstream f(root + "/" + path);
    for (int i = 0; i < lines; ++i) f << "// line\n";
  };
  const auto diff = [&] {
    return gtpo::testing::run_shell("python3 '" + kScript + "' --root '" + root + "' --diff");
  };
  write_lines("rl/a.cpp", 10);
  write_lines("model/fixtures/data.py", 5);  // fixtures are data, counted in neither commit
  REQUIRE(gtpo::testing::run_shell(git + "init -q && " + git + "add -A && " + git + "commit -qm one").code ==
          0);
  const auto single = diff();
  INFO(single.output);
  CHECK(single.code == 0);
  CHECK_THAT(single.output, Contains("size: no base"));

  write_lines("rl/a.cpp", 7);
  write_lines("runtime/b.h", 4);
  REQUIRE(gtpo::testing::run_shell(git + "add -A && " + git + "commit -qm two").code == 0);
  write_lines("apps/c.cpp", 2);  // not committed: the working tree is what is counted now
  const auto changed = diff();
  INFO(changed.output);
  CHECK(changed.code == 0);
  CHECK_THAT(changed.output, Contains("size: production lines against HEAD~1"));
  CHECK_THAT(changed.output, Contains("size: rl 10 -> 7 (-3)"));
  CHECK_THAT(changed.output, Contains("size: runtime 0 -> 4 (+4)"));
  CHECK_THAT(changed.output, Contains("size: apps 0 -> 2 (+2)"));
  CHECK_THAT(changed.output, Contains("size: model 0 -> 0 (+0)"));
  CHECK_THAT(changed.output, Contains("size: production 10 -> 13 (+3)"));
}

TEST_CASE("layers: an include across the floors fails the check, naming the file, the line and the rule",
          "[size-budget]") {
  const auto today = layers(GTPO_SOURCE_DIR);
  INFO(today.output);
  CHECK(today.code == 0);

  const std::string root = gtpo::testing::fresh_temp_dir("layers");
  fs::create_directories(root + "/rl/math");
  fs::create_directories(root + "/runtime");
  std::ofstream(root + "/rl/math/ok.h") << "#include \"runtime/error.h\"\n#include \"rl/math/zscore.h\"\n";
  std::ofstream(root + "/rl/step.cpp") << "#include \"model/transformer.h\"\n#include \"rl/math/ok.h\"\n";
  CHECK(layers(root).code == 0);
  std::ofstream(root + "/rl/math/tensor_user.cpp") << "#include <vector>\n\n#include \"runtime/tensor.h\"\n";
  std::ofstream(root + "/runtime/upward.h") << "#include \"model/transformer.h\"\n";
  const auto bad = layers(root);
  CHECK(bad.code == 1);
  CHECK_THAT(bad.output,
             Contains("rl/math/tensor_user.cpp:3: includes runtime/tensor.h, but rl/math/ may include "
                      "only rl/math/, runtime/error.h, runtime/config_codec.h"));
  CHECK_THAT(bad.output,
             Contains("runtime/upward.h:1: includes model/transformer.h, but runtime/ may include only "
                      "runtime/"));
}

TEST_CASE("layers: rl/run/ is a floor above rl/: rl/run/ may include rl/, an include of it from rl/ fails",
          "[size-budget]") {
  const std::string root = gtpo::testing::fresh_temp_dir("layers_run_floor");
  fs::create_directories(root + "/rl/run");
  std::ofstream(root + "/rl/run/trainer.h")
      << "#include \"rl/rl_step.h\"\n#include \"model/transformer.h\"\n";
  std::ofstream(root + "/rl/rl_step.h") << "#include \"rl/math/rollout.h\"\n";
  const auto floor_kept = layers(root);
  INFO(floor_kept.output);
  CHECK(floor_kept.code == 0);
  std::ofstream(root + "/rl/external_reward.cpp") << "#include <atomic>\n#include \"rl/run/trainer.h\"\n";
  const auto upward = layers(root);
  CHECK(upward.code == 1);
  CHECK_THAT(upward.output,
             Contains("rl/external_reward.cpp:2: includes rl/run/trainer.h, but rl/ may include "
                      "only rl/, model/, runtime/, data/ (not rl/run/)"));
}

TEST_CASE("layers: a loop of includes inside rl/math/ fails, naming the include and the loop",
          "[size-budget]") {
  const std::string root = gtpo::testing::fresh_temp_dir("layers_math_loop");
  fs::create_directories(root + "/rl/math");
  std::ofstream(root + "/rl/math/config.h") << "#include <string>\n";
  std::ofstream(root + "/rl/math/registry.h") << "#include \"rl/math/config.h\"\n";
  std::ofstream(root + "/rl/math/config.cpp") << "#include \"rl/math/config.h\"\n";
  CHECK(layers(root).code == 0);
  std::ofstream(root + "/rl/math/config.cpp")
      << "#include \"rl/math/config.h\"\n#include \"rl/math/registry.h\"\n";
  const auto loop = layers(root);
  CHECK(loop.code == 1);
  CHECK_THAT(loop.output, Contains("includes a loop: rl/math/config -> rl/math/registry -> rl/math/config"));
}
