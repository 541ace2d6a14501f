#include "apps/rollout_line.h"

#include "data/jsonl.h"
#include "runtime/error.h"
#include "runtime/io/json_parse.h"

namespace gtpo::apps {

using json = nlohmann::ordered_json;

rl::Response parse_rollout_line(const std::string& text, const std::string& where, json& group) {
  json j;
  try {
    j = io::parse_json(text);
  } catch (const json::exception& e) {
    // Not only syntax: a number out of double's range (1e999) is nlohmann's out_of_range.406.
    fail(where, ": invalid JSON: ", data::json_error_message(e));
  }
  GTPO_CHECK(j.is_object(), where, ": expected a JSON object, got ", j.type_name());
  rl::Response r;
  GTPO_CHECK(j.contains("group"), where, ": missing \"group\"");
  group = j["group"];
  if (group.is_string()) {
    r.group = group.get<std::string>();
  } else {
    GTPO_CHECK(group.is_number_integer(), where, ": \"group\" must be a string or an integer, got ", group.type_name());
    r.group = group.dump();
  }
  GTPO_CHECK(j.contains("correct"), where, ": missing \"correct\"");
  GTPO_CHECK(j["correct"].is_boolean(), where, ": \"correct\" must be true or false, got ", j["correct"].dump());
  r.correct = j["correct"].get<bool>();
  if (j.contains("truncated")) {
    GTPO_CHECK(j["truncated"].is_boolean(), where, ": \"truncated\" must be true or false, got ",
               j["truncated"].dump());
    r.truncated = j["truncated"].get<bool>();
  }
  if (j.contains("length")) {
    const json& l = j["length"];
    GTPO_CHECK(l.is_number_integer() && l.get<long long>() >= 0 && l.get<long long>() <= 100000000, where,
               ": \"length\" must be a non-negative integer, got ", l.dump());
    r.length = static_cast<int>(l.get<long long>());
  }
  GTPO_CHECK(j.contains("entropies") || j.contains("length"), where, ": missing \"entropies\" (or \"length\")");
  if (j.contains("entropies")) {
    const json& e = j["entropies"];
    GTPO_CHECK(e.is_array(), where, ": \"entropies\" must be an array of numbers, got ", e.type_name());
    r.entropies.reserve(e.size());
    for (std::size_t t = 0; t < e.size(); ++t) {
      GTPO_CHECK(e[t].is_number(), where, ": entropies[", t, "] must be a number, got ", e[t].dump());
      r.entropies.push_back(e[t].get<float>());
    }
  }
  return r;
}

}  // namespace gtpo::apps
