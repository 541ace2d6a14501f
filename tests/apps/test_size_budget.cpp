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

}  // namespace

TEST_CASE("size budget: the tree is within its caps, and a function or a folder over its cap fails, named",
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

  fs::create_directories(root + "/model");
  std::ofstream big(root + "/model/big.h");
  for (int i = 0; i < 3000; ++i) big << "// line\n";
  big.close();
  const auto over = budget(root);
  CHECK(over.code == 1);
  CHECK_THAT(over.output, Contains("model/ has 3000 lines, over its cap of"));
}

TEST_CASE("layers: an include across the floors fails the check, naming the file, the line and the rule",
          "[size-budget]") {
  const auto run = [](const std::string& root) {
    return gtpo::testing::run_shell("python3 '" + std::string(GTPO_SOURCE_DIR) +
                                    "/scripts/check_layers.py' --root '" + root + "'");
  };
  const auto today = run(GTPO_SOURCE_DIR);
  INFO(today.output);
  CHECK(today.code == 0);

  const std::string root = gtpo::testing::fresh_temp_dir("layers");
  fs::create_directories(root + "/rl/math");
  fs::create_directories(root + "/runtime");
  std::ofstream(root + "/rl/math/ok.h") << "#include \"runtime/error.h\"\n#include \"rl/math/zscore.h\"\n";
  std::ofstream(root + "/rl/step.cpp") << "#include \"model/transformer.h\"\n#include \"rl/math/ok.h\"\n";
  CHECK(run(root).code == 0);
  std::ofstream(root + "/rl/math/tensor_user.cpp") << "#include <vector>\n\n#include \"runtime/tensor.h\"\n";
  std::ofstream(root + "/runtime/upward.h") << "#include \"model/transformer.h\"\n";
  const auto bad = run(root);
  CHECK(bad.code == 1);
  CHECK_THAT(bad.output,
             Contains("rl/math/tensor_user.cpp:3: includes runtime/tensor.h, but rl/math/ may include "
                      "only rl/math/, runtime/error.h, runtime/config_codec.h"));
  CHECK_THAT(bad.output,
             Contains("runtime/upward.h:1: includes model/transformer.h, but runtime/ may include only "
                      "runtime/"));
}
