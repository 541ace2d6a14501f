#include "data/tasks/registry.h"

#include <functional>
#include <map>

#include "data/tasks/arith.h"
#include "data/tasks/chain.h"
#include "data/tasks/countdown.h"
#include "data/tasks/progression.h"
#include "runtime/config_codec.h"
#include "runtime/error.h"

namespace gtpo::data {

namespace {

struct Entry {
  const std::vector<std::string>& (*options)();
  std::function<std::unique_ptr<Task>(const TaskOptions&)> make;
};

const std::map<std::string, Entry>& registry() {
  static const std::map<std::string, Entry> entries = {
      {"arith", {&ArithTask::option_names, [](const TaskOptions& o) { return std::make_unique<ArithTask>(o); }}},
      {"chain", {&ChainTask::option_names, [](const TaskOptions& o) { return std::make_unique<ChainTask>(o); }}},
      {"countdown",
       {&CountdownTask::option_names, [](const TaskOptions& o) { return std::make_unique<CountdownTask>(o); }}},
      {"progression",
       {&ProgressionTask::option_names, [](const TaskOptions& o) { return std::make_unique<ProgressionTask>(o); }}},
  };
  return entries;
}

const Entry& find_entry(const std::string& name) {
  const auto it = registry().find(name);
  if (it == registry().end())
    fail("unknown task '", name, "' (known tasks: ", config::join(task_names()), ")");
  return it->second;
}

}  // namespace

std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options) {
  const Entry& entry = find_entry(name);
  // Unknown keys first: a typo should be reported as a typo, not as a bad value of some default.
  options.check_known(name, entry.options());
  return entry.make(options);
}

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry()) names.push_back(name);
  return names;
}

std::vector<std::string> task_option_names(const std::string& name) { return find_entry(name).options(); }

}  // namespace gtpo::data
