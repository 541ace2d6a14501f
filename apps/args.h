// A small command-line parser shared by the subcommands: --flag VALUE, --switch, key=value overrides and
// positionals. Unknown flags are errors that list the valid ones.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gtpo::apps {

struct FlagSpec {
  FlagSpec(std::string flag, bool value, std::string text, std::string other = "")
      : name(std::move(flag)), takes_value(value), help(std::move(text)), alias(std::move(other)) {}
  std::string name;   // "--checkpoint" or "-n"
  bool takes_value;
  std::string help;
  std::string alias;  // optional second spelling
};

class Args {
 public:
  // argv[0] is the subcommand name. Throws gtpo::Error on an unknown flag or a missing value.
  Args(int argc, char** argv, const std::vector<FlagSpec>& specs);
  Args(int argc, char** argv, std::vector<FlagSpec>&& specs) = delete;  // it keeps a reference to SPECS

  bool help() const { return help_; }
  // With --help: prints the usage (SYNOPSIS, DESCRIPTION and the flags) to stdout and returns true.
  bool printed_help(const std::string& synopsis, const std::string& description) const;
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }
  std::string get(const std::string& flag, const std::string& fallback) const;
  std::string require(const std::string& flag) const;  // error naming the flag when missing
  // An integer in [lo, hi]; anything else is an error naming the flag and the range.
  int64_t get_int(const std::string& flag, int64_t fallback,
                  int64_t lo = std::numeric_limits<int64_t>::lowest(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const;
  double get_double(const std::string& flag, double fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  // key=value arguments, in order.
  const std::vector<std::pair<std::string, std::string>>& overrides() const { return overrides_; }
  // Fails, naming COMMAND and the first such argument, on positionals or KEY=VALUE arguments the command
  // does not take: an argument given is never silently ignored.
  void reject_unused(const std::string& command, bool takes_positionals, bool takes_overrides) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
  std::vector<std::pair<std::string, std::string>> overrides_;
  bool help_ = false;
  const std::vector<FlagSpec>& specs_;  // the command's static flag table
};

}  // namespace gtpo::apps
