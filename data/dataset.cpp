#include "data/dataset.h"

#include <algorithm>

#include "data/tasks/registry.h"
#include "data/verify/answer.h"
#include "runtime/config_codec.h"

namespace gtpo::data {

namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// Numbers are stored in canonical form so a dataset answer "1,000" matches a completion "1000"
// by plain string comparison too; other answers are kept verbatim (trimmed).
std::string canonical_answer(const std::string& text) {
  const auto number = normalize_number(text);
  return number ? *number : trimmed(text);
}

}  // namespace

std::string strip_calculator_annotations(const std::string& text) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto open = text.find("<<", pos);
    const auto close = open == std::string::npos ? std::string::npos : text.find(">>", open + 2);
    if (close == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    out += text.substr(pos, open - pos);
    pos = close + 2;
  }
  return out;
}

std::string gsm8k_final_answer(const JsonLine& where, const std::string& answer_text) {
  const auto marker = answer_text.rfind(kAnswerMarker);
  if (marker == std::string::npos) fail_at(where, "GSM8K field 'answer' has no '####' final answer");
  const std::string answer = canonical_answer(answer_text.substr(marker + kAnswerMarker.size()));
  if (answer.empty()) fail_at(where, "GSM8K field 'answer' has nothing after '####'");
  return answer;
}

namespace {

void read_answer(const JsonLine& line, Problem& p) {
  const auto& answer = require_field(line, "answer");
  if (answer.is_string()) {
    p.answer = canonical_answer(answer.get<std::string>());
  } else if (answer.is_number()) {
    p.answer = canonical_answer(answer.dump());
  } else {
    fail_at(line, "field 'answer' must be a string or a number (got ", json_type_name(answer), ")");
  }
  if (p.answer.empty()) fail_at(line, "field 'answer' is empty");
}

// The conversation of field KEY; a final assistant turn of "messages" becomes the reference solution.
std::vector<chat::ChatMessage> conversation_of(const JsonLine& line, const std::string& key, Problem& p) {
  const std::string where = line.source + ":" + std::to_string(line.line) + ": field '" + key + "'";
  std::vector<chat::ChatMessage> messages = chat::messages_from_json(ordered_field(line, key), where);
  if (messages.empty()) fail_at(line, "field '", key, "' holds no messages");
  if (key == "messages" && messages.back().role == "assistant") {
    if (messages.back().content) p.reference_solution = *messages.back().content;
    messages.pop_back();
    if (messages.empty()) fail_at(line, "field 'messages' holds only the assistant's answer, no prompt");
  }
  return messages;
}

// A plain prompt through FORMAT; a template that fails names this row.
std::string plain_prompt(const JsonLine& line, const chat::PromptFormat& format, const std::string& prompt) {
  try {
    return format.plain(prompt);
  } catch (const Error& e) {
    fail_at(line, e.what());
  }
}

}  // namespace

Problem problem_from_json(const JsonLine& line, const chat::PromptFormat& format) {
  Problem p;
  p.task = "jsonl";
  const std::string where = line.source + ":" + std::to_string(line.line);
  if (line.value.contains("messages") || (line.value.contains("prompt") && line.value["prompt"].is_array())) {
    const std::string key = line.value.contains("messages") ? "messages" : "prompt";
    if (!format.has_template()) chat::fail_no_chat_template(where + ": field '" + key + "'");
    const std::vector<chat::ChatMessage> messages = conversation_of(line, key, p);
    p.prompt = format.conversation(messages, where);
    p.rendered = true;
    read_answer(line, p);
    if (p.reference_solution.empty()) p.reference_solution = optional_string(line, "solution").value_or("#### " + p.answer);
  } else if (line.value.contains("question")) {
    const std::string question = require_string(line, "question");
    const std::string answer_text = require_string(line, "answer");
    p.prompt = format.transforms_plain() ? plain_prompt(line, format, question) : question + "\n";
    p.rendered = format.transforms_plain();
    p.answer = gsm8k_final_answer(line, answer_text);
    // The reasoning before "####" becomes the solution, ending in the canonical answer line.
    const std::string reasoning = trimmed(strip_calculator_annotations(answer_text.substr(0, answer_text.rfind(kAnswerMarker))));
    p.reference_solution = (reasoning.empty() ? "" : reasoning + "\n") + "#### " + p.answer;
  } else if (line.value.contains("prompt")) {
    const std::string prompt = require_string(line, "prompt");
    if (prompt.empty()) fail_at(line, "empty prompt");
    p.prompt = plain_prompt(line, format, prompt);
    p.rendered = format.transforms_plain();
    read_answer(line, p);
    p.reference_solution = optional_string(line, "solution").value_or("#### " + p.answer);
  } else {
    fail_at(line, "expected a 'prompt' field (or GSM8K's 'question'), or a conversation in 'messages'");
  }
  if (p.prompt.empty() || p.prompt == "\n") fail_at(line, "empty prompt");
  p.key = p.prompt;
  // A row may name the task whose verifier judges it ("task": "countdown", as problem_to_json writes).
  if (const auto task = optional_string(line, "task"); task && *task != "jsonl") {
    const std::vector<std::string> names = task_names();
    if (std::find(names.begin(), names.end(), *task) == names.end())
      fail_at(line, "field 'task' names no task: '", *task, "' (valid: jsonl, ", config::join(names), ")");
    p.task = *task;
    if (p.task == "countdown") {
      for (const auto& n : require_array(line, "numbers")) {
        if (!n.is_number_integer()) fail_at(line, "field 'numbers' must hold integers (got ", json_type_name(n), ")");
        p.numbers.push_back(n.get<int64_t>());
      }
      if (p.numbers.empty()) fail_at(line, "field 'numbers' is empty");
      p.target = require_int(line, "target");
    }
  }
  p.row = line.value.dump();
  return p;
}

std::vector<Problem> load_problems(const std::string& path, const chat::PromptFormat& format) {
  std::vector<Problem> out;
  for (const JsonLine& line : read_jsonl(path)) out.push_back(problem_from_json(line, format));
  return out;
}

nlohmann::json problem_to_json(const Problem& problem) {
  nlohmann::json j = {{"task", problem.task},
                      {"prompt", problem.prompt},
                      {"answer", problem.answer},
                      {"solution", problem.reference_solution}};
  if (!problem.numbers.empty()) {
    j["numbers"] = problem.numbers;
    j["target"] = problem.target;
  }
  return j;
}

}  // namespace gtpo::data
