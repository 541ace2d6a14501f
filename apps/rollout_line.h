// One line of `gtpo advantages --in ROLLOUTS.jsonl` read into an rl::Response (the format is in
// docs/algorithms.md). Its own file so that the fuzz harness (tests/fuzz) reads lines as the command does.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "rl/math/rollout.h"

namespace gtpo::apps {

// Parses TEXT (one non-blank line); WHERE ("FILE:LINE") starts every error message. GROUP receives the
// line's "group" value as given (string or integer), for the output. Every problem is a gtpo::Error.
rl::Response parse_rollout_line(const std::string& text, const std::string& where, nlohmann::ordered_json& group);

}  // namespace gtpo::apps
