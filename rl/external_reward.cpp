#include "rl/external_reward.h"

#include <chrono>
#include <cmath>
#include <optional>

#include "rl/stop_flag.h"
#include "runtime/io/json_parse.h"
#include "runtime/io/subprocess.h"

namespace gtpo::rl {
namespace {

// Long requests and replies are cut in messages: the start says which completion it was.
std::string clipped(const std::string& text, std::size_t limit = 600) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string json_type(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a bool";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

double finite_number(const nlohmann::json& v, const std::string& field) {
  GTPO_CHECK(v.is_number(), "\"", field, "\" must be a number, got ", json_type(v), " (", clipped(v.dump(), 60), ")");
  const double x = v.get<double>();
  GTPO_CHECK(std::isfinite(x), "\"", field, "\" is not finite (", x, ")");
  GTPO_CHECK(std::abs(x) <= kMaxRewardMagnitude, "\"", field, "\" is ", x, ", beyond +-",
             config::format_double(kMaxRewardMagnitude), " (larger values overflow a group's statistics)");
  return x;
}

std::vector<double> token_rewards_of(const nlohmann::json& j, int64_t expected_id, int64_t tokens) {
  const bool given = j.contains("token_rewards") && !j["token_rewards"].is_null();
  if (tokens < 0) {
    GTPO_CHECK(!given, "the reply to id ", expected_id, " has \"token_rewards\" but this function's ",
               "reward.functions[].token_rewards is false: set it to true to use them");
    return {};
  }
  GTPO_CHECK(given, "the reply to id ", expected_id, " has no \"token_rewards\" (reward.functions[].",
             "token_rewards is true: one number per token of the request's token_ids, ", tokens, " here)");
  const nlohmann::json& list = j["token_rewards"];
  GTPO_CHECK(list.is_array(), "\"token_rewards\" must be a list of numbers, got ", json_type(list));
  GTPO_CHECK(static_cast<int64_t>(list.size()) == tokens, "the reply to id ", expected_id, " gives ",
             list.size(), " token_rewards for a completion of ", tokens, " tokens (one per token_ids entry)");
  std::vector<double> out;
  out.reserve(list.size());
  for (std::size_t t = 0; t < list.size(); ++t)
    out.push_back(finite_number(list[t], "token_rewards[" + std::to_string(t) + "]"));
  return out;
}

}  // namespace

RewardScore parse_reward_reply(const std::string& line, int64_t expected_id, int64_t tokens) {
  nlohmann::json j;
  try {
    j = io::parse_json(line);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number beyond double (1e999)
    fail("the reply is not JSON (", e.what(), ")");
  }
  GTPO_CHECK(j.is_object(), "the reply must be a JSON object like {\"id\": ", expected_id,
             ", \"reward\": 0.5}, got ", json_type(j));
  GTPO_CHECK(j.contains("id"), "the reply has no \"id\" field: echo the request's \"id\" (", expected_id,
             " here), so that each reply is matched to its request");
  GTPO_CHECK(j["id"].is_number_integer() && j["id"].get<int64_t>() == expected_id, "the reply answers id ",
             clipped(j["id"].dump(), 60), " where id ", expected_id,
             " was expected: a line too many or too few came earlier (one reply per request, in order)");
  GTPO_CHECK(j.contains("reward"), "the reply has no \"reward\" field");
  RewardScore s;
  s.value = finite_number(j["reward"], "reward");
  if (j.contains("correct") && !j["correct"].is_null()) {
    GTPO_CHECK(j["correct"].is_boolean(), "\"correct\" must be true or false, got ", json_type(j["correct"]));
    s.correct = j["correct"].get<bool>();
  }
  if (j.contains("components") && !j["components"].is_null()) {
    GTPO_CHECK(j["components"].is_object(), "\"components\" must be an object of numbers, got ",
               json_type(j["components"]));
    for (const auto& [name, v] : j["components"].items()) {
      GTPO_CHECK(!name.empty() && name.find_first_of("/ \t\n") == std::string::npos, "component name '", name,
                 "' must be non-empty, without '/' or spaces (it names the metric rewards/FUNCTION/NAME/mean)");
      s.components.emplace_back(name, finite_number(v, "components." + name));
    }
  }
  s.token_rewards = token_rewards_of(j, expected_id, tokens);
  return s;
}

ExternalReward::ExternalReward(std::string name, std::string command, double timeout_s, bool token_rewards)
    : name_(std::move(name)),
      command_(std::move(command)),
      timeout_s_(timeout_s),
      token_rewards_(token_rewards) {}

ExternalReward::~ExternalReward() = default;

void ExternalReward::fail_with(const std::string& what, const nlohmann::json* request, const std::string& reply) {
  std::string message = "reward '" + name_ + "' (" + command_ + "): " + what;
  if (request) message += "\n  request: " + clipped(request->dump());
  message += "\n  reply: " + (reply.empty() ? std::string("(nothing)") : clipped(reply));
  std::string tail;
  if (process_) {
    process_->kill();
    tail = process_->stderr_tail();
    process_.reset();
  }
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  message += "\n  stderr: " + (tail.empty() ? std::string("(empty)") : "\n" + tail);
  throw RewardError(message);
}

void ExternalReward::start(double probe_s) {
  if (!process_) {
    try {
      process_ = std::make_unique<io::Subprocess>(command_);
    } catch (const Error& e) {
      fail_with(std::string("cannot start: ") + e.what(), nullptr, "");
    }
  }
  if (probe_s <= 0.0) return;
  const std::string status = process_->exit_status(probe_s);
  if (status != "still running")
    fail_with("the process ended (" + status + ") before its first request, at the start of the run", nullptr,
              process_->unread());
}

std::vector<RewardScore> ExternalReward::score(const std::vector<nlohmann::json>& requests) {
  if (requests.empty()) return {};
  start(0.0);
  std::vector<nlohmann::json> sent = requests;
  const int64_t first_id = next_id_;
  for (nlohmann::json& r : sent) r["id"] = next_id_++;
  std::string text;
  for (const nlohmann::json& r : sent) text += r.dump() + "\n";
  const std::size_t n = requests.size();
  if (!process_->unread().empty())
    fail_with("it wrote output nobody asked for (more lines than requests in an earlier batch)", nullptr,
              process_->unread());
  // A stop request (SIGINT, SIGTERM) ends the wait 2 s later: a quick batch still completes its step, a
  // slow one (a long reward.timeout_s) does not keep the run from stopping.
  std::optional<std::chrono::steady_clock::time_point> stop_seen;
  const auto stop = [&] {
    if (!stop_requested()) return false;
    const auto now = std::chrono::steady_clock::now();
    if (!stop_seen) stop_seen = now;
    return now - *stop_seen > std::chrono::seconds(2);
  };
  const io::Subprocess::Exchange ex = process_->exchange(text, n, timeout_s_, stop);

  std::vector<RewardScore> scores;
  for (std::size_t i = 0; i < ex.lines.size(); ++i) {
    try {
      const int64_t tokens =
          token_rewards_ ? static_cast<int64_t>(sent[i].value("token_ids", nlohmann::json::array()).size())
                         : -1;
      scores.push_back(parse_reward_reply(ex.lines[i], first_id + static_cast<int64_t>(i), tokens));
    } catch (const Error& e) {
      fail_with("reply " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + e.what(), &sent[i],
                ex.lines[i]);
    }
  }
  if (ex.overflowed)
    fail_with("it wrote more than " + std::to_string(io::Subprocess::kMaxPendingOutput >> 20) +
                  " MiB without completing the replies",
              &sent[ex.lines.size() < n ? ex.lines.size() : n - 1], process_->unread().substr(0, 600));
  if (ex.interrupted)
    fail_with("stopped by a signal while waiting for its replies", nullptr, process_->unread());
  if (ex.lines.size() < n) {
    const nlohmann::json& waiting_for = sent[ex.lines.size()];
    const std::string got = std::to_string(ex.lines.size()) + " of " + std::to_string(n) + " replies";
    if (ex.timed_out)
      fail_with("no reply within reward.timeout_s = " + config::format_double(timeout_s_) + " s (got " + got + ")",
                &waiting_for, process_->unread());
    fail_with("the process ended (" + process_->exit_status(1.0) + ") after " + got, &waiting_for,
              process_->unread());
  }
  if (!process_->unread().empty())
    fail_with("it wrote more than one line per request (" + std::to_string(n) + " requests)", nullptr,
              process_->unread());
  return scores;
}

}  // namespace gtpo::rl
