// Problems from JSONL files. Each non-blank line is one of
//   {"prompt": "...", "answer": "42" | 42, "solution": "..." (optional)}
//   {"question": "...", "answer": "...reasoning... #### 42"}                (GSM8K)
//   {"prompt": [{"role": "user", "content": "..."}, ...], "answer": ...}    (TRL's conversational prompt)
//   {"messages": [{"role": ..., "content": ...}, ...], "answer": ...}      (a final assistant turn, if
//                                                                          any, is the solution)
// and becomes a Problem with task "jsonl"; judge completions with check_final_answer(problem.answer, ...).
// The prompt text comes from FORMAT (data/chat/prompt_format.h): conversations are rendered with its chat
// template and the generation prompt; plain prompts stay as they are unless the format says otherwise.
// A row may name a task ("task": "countdown", with its "numbers" and "target") whose verifier then judges
// it instead. The whole row is kept (Problem::row), every column, for external reward functions.
// Any bad line is a gtpo::Error "FILE:LINE: problem". Formats are documented in docs/tasks.md.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/prompt_format.h"
#include "data/jsonl.h"
#include "data/tasks/task.h"

namespace gtpo::data {

std::vector<Problem> load_problems(const std::string& path, const chat::PromptFormat& format = {});
Problem problem_from_json(const JsonLine& line, const chat::PromptFormat& format = {});

// The final answer of a GSM8K answer text: what follows the last "####", normalised when it is a
// number. Fails (naming the line) when there is no "####" or nothing after it.
std::string gsm8k_final_answer(const JsonLine& where, const std::string& answer_text);

// GSM8K reasoning with calculator annotations removed: "48/2 = <<48/2=24>>24" -> "48/2 = 24".
std::string strip_calculator_annotations(const std::string& text);

// {"prompt", "answer", "solution"} plus "task", and for countdown "numbers" and "target": the
// record a generated problem is saved as (load_problems reads back prompt, answer, solution).
nlohmann::json problem_to_json(const Problem& problem);

}  // namespace gtpo::data
