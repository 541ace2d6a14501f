// Creating tasks by name, as configs do: make_task("arith", {{"difficulty", "3"}}).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tasks/options.h"
#include "data/tasks/task.h"

namespace gtpo::data {

// Throws gtpo::Error for an unknown name (listing the known ones) or an unknown or invalid option
// (listing the task's valid options).
std::unique_ptr<Task> make_task(const std::string& name, const TaskOptions& options = {});

// Names accepted by make_task, sorted.
std::vector<std::string> task_names();

// Option keys a task accepts.
std::vector<std::string> task_option_names(const std::string& name);

}  // namespace gtpo::data
