#include "apps/args.h"

#include <cstdio>

#include "rl/run_config.h"
#include "runtime/config_codec.h"
#include "runtime/error.h"

namespace gtpo::apps {

Args::Args(int argc, char** argv, const std::vector<FlagSpec>& specs) : specs_(specs) {
  auto find = [&](const std::string& arg) -> const FlagSpec* {
    for (const FlagSpec& s : specs)
      if (s.name == arg || (!s.alias.empty() && s.alias == arg)) return &s;
    return nullptr;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && !(arg.size() > 1 && (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.'))) {
      std::string value;
      bool inline_value = false;
      if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        inline_value = true;
      }
      const FlagSpec* spec = find(arg);
      if (!spec) {
        std::string valid;
        for (const FlagSpec& s : specs) valid += (valid.empty() ? "" : ", ") + s.name;
        std::vector<std::string> names = {"--help"};
        for (const FlagSpec& s : specs) names.push_back(s.name);
        fail(argv[0], ": unknown option '", arg, "'", config::did_you_mean(arg, names),
             "; valid options: ", valid, ", --help");
      }
      if (spec->takes_value) {
        if (!inline_value) {
          GTPO_CHECK(i + 1 < argc, argv[0], ": option ", arg, " needs a value");
          value = argv[++i];
        }
      } else {
        GTPO_CHECK(!inline_value, argv[0], ": option ", arg, " takes no value");
        value.assign(1, '1');  // (assigning a literal trips GCC 12's false -Wrestrict here)
      }
      values_[spec->name] = value;
    } else if (rl::is_override(arg)) {
      overrides_.push_back(rl::split_override(arg));  // the same splitter the config tests exercise
    } else {
      positionals_.push_back(arg);
    }
  }
}

void Args::reject_unused(const std::string& command, bool takes_positionals, bool takes_overrides) const {
  GTPO_CHECK(takes_positionals || positionals_.empty(), command, ": unexpected argument '",
             positionals_.front(), "' (", command, " takes flags only; see --help)");
  GTPO_CHECK(takes_overrides || overrides_.empty(), command, ": unexpected argument '",
             overrides_.front().first, "=", overrides_.front().second, "' (", command,
             " takes no KEY=VALUE settings; see --help)");
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::string Args::require(const std::string& flag) const {
  auto it = values_.find(flag);
  GTPO_CHECK(it != values_.end(), "missing required option ", flag, " (see --help)");
  return it->second;
}

namespace {

// FLAG's value through CODEC, FALLBACK when it is absent; a bad value is an error naming the flag.
template <typename T>
T parsed(const std::map<std::string, std::string>& values, const std::string& flag, T fallback,
         const config::Codec<T>& codec) {
  const auto it = values.find(flag);
  if (it == values.end()) return fallback;
  try {
    return codec.parse(it->second);
  } catch (const Error& e) {
    fail("option ", flag, ": ", e.what());
  }
}

}  // namespace

int64_t Args::get_int(const std::string& flag, int64_t fallback, int64_t lo, int64_t hi) const {
  return parsed(values_, flag, fallback, config::integer<int64_t>(lo, hi));
}

double Args::get_double(const std::string& flag, double fallback) const {
  return parsed(values_, flag, fallback, config::number());
}

bool Args::printed_help(const std::string& synopsis, const std::string& description) const {
  if (!help_) return false;
  std::string out = "usage: " + synopsis + "\n\n" + description + "\n\noptions:\n";
  for (const FlagSpec& s : specs_) {
    std::string left = "  " + s.name + (s.alias.empty() ? "" : ", " + s.alias) + (s.takes_value ? " VALUE" : "");
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + s.help + "\n";
  }
  std::fputs((out + "  --help                     show this text\n").c_str(), stdout);
  return true;
}

}  // namespace gtpo::apps
