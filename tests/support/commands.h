// Helpers for tests that drive gtpo commands as a user would: a fresh scratch directory per test, and a
// call of a command function with an argv built from strings.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gtpo::testing {

// An empty directory under the system temp dir, unique to this process and name.
inline std::string fresh_temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("gtpo_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

// Runs a command function (argv[0] = the subcommand name) and returns its exit code.
inline int call_command(std::vector<std::string> args, int (*command)(int, char**)) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return command(static_cast<int>(argv.size()), argv.data());
}

}  // namespace gtpo::testing
