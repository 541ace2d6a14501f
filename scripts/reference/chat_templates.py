#!/usr/bin/env python3
"""Expected renders of chat templates, made by transformers' own Jinja machinery.

Every template in tests/fixtures/chat_templates/templates/ (real chat templates of Qwen2.5-Instruct,
Llama-3.1/3.2-Instruct, SmolLM2-Instruct, Mistral-Instruct, Gemma-it and DeepSeek-R1, transcribed from their
tokenizer_config.json, plus synthetic templates that exercise every construct gtpo supports) is compiled
with transformers.utils.chat_template_utils._compile_jinja_template (the function apply_chat_template uses:
an ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson,
raise_exception and strftime_now) and rendered with exactly the variables apply_chat_template passes
(messages, tools, documents, add_generation_prompt, the special tokens), for each conversation below with
add_generation_prompt false and true. strftime_now is pinned to 2024-07-26 00:00 UTC, gtpo's
kDefaultChatTime, so the renders do not depend on the day. The error cases (bad templates) record the
exception and the template line jinja2 reports.

Writes tests/fixtures/chat_templates/cases.jsonl and errors.jsonl. Regenerate with
    python=$(scripts/reference/hf_python.sh) && "$python" scripts/reference/chat_templates.py
(hf_python.sh makes a venv with transformers 4.45.2 and jinja2 3.1). tests/data/test_chat_template.cpp
renders the same inputs with gtpo and compares byte for byte.
"""
import datetime
import json
import pathlib
import sys
import traceback

import jinja2
import transformers
from transformers.utils.chat_template_utils import _compile_jinja_template

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "chat_templates"
PINNED_NOW = datetime.datetime(2024, 7, 26, tzinfo=datetime.timezone.utc)

TOKENS = {  # the special tokens each family's tokenizer has (special_tokens_map: bos/eos only here)
    "qwen2.5-instruct": {"eos_token": "<|im_end|>"},
    "llama3.1-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.2-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "smollm2-instruct": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"},
    "mistral-instruct": {"bos_token": "<s>", "eos_token": "</s>"},
    "gemma-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
    "deepseek-r1": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
}
SYNTHETIC_TOKENS = {"bos_token": "<s>"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name, e.g. Zürich"},
                           "days": {"type": "integer", "minimum": 1}},
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "user": {"messages": [{"role": "user", "content": "What is 2+2?"}]},
    "system_user": {"messages": [{"role": "system", "content": "You are terse."},
                                 {"role": "user", "content": "Name a prime."}]},
    "multi_turn": {"messages": [{"role": "system", "content": "  Be kind.  "},
                                {"role": "user", "content": "Hi!"},
                                {"role": "assistant", "content": "Hello. How can I help?"},
                                {"role": "user", "content": "Count to 3.\n"}]},
    "no_system_multi": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                     {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]},
    "unicode": {"messages": [{"role": "user", "content": "Ünïcödé 你好 🎉 مرحبا\n  with   spaces \t"},
                             {"role": "assistant", "content": " <tags> & \"quotes\" 'single' \\ back "},
                             {"role": "user", "content": "ok"}]},
    "think": {"messages": [{"role": "user", "content": "Solve 2+2."},
                           {"role": "assistant", "content": "<think>\nadd them\n</think>\nThe answer is 4."},
                           {"role": "user", "content": "And 3+3?"}]},
    "tools": {"tools": [WEATHER_TOOL],
              "messages": [{"role": "user", "content": "Weather in Zürich?"},
                           {"role": "assistant", "content": "",
                            "tool_calls": [{"type": "function", "function": {
                                "name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}}]},
                           {"role": "tool", "content": "{\"temp\": 21.5}"},
                           {"role": "assistant", "content": "21.5 degrees."}]},
    "tools_string_args": {"messages": [{"role": "user", "content": "Weather?"},
                                       {"role": "assistant", "content": None,
                                        "tool_calls": [{"type": "function", "function": {
                                            "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                                       {"role": "tool", "content": "cold"},
                                       {"role": "tool", "content": "windy"},
                                       {"role": "assistant", "content": "Cold and windy."}]},
    "builtin_tools": {"extra": {"builtin_tools": ["code_interpreter", "brave_search"]},
                      "messages": [{"role": "user", "content": "Search it."},
                                   {"role": "assistant", "tool_calls": [{"type": "function", "function": {
                                       "name": "brave_search", "arguments": {"query": "gtpo"}}}]},
                                   {"role": "ipython", "content": "result"}]},
    "date_and_tools_in_system": {"tools": [WEATHER_TOOL],
                                 "extra": {"date_string": "01 Jan 2025", "tools_in_user_message": False},
                                 "messages": [{"role": "system", "content": "sys"},
                                              {"role": "user", "content": "Weather?"}]},
    "missing_content": {"messages": [{"role": "user"}]},
    "empty": {"messages": []},
}

ERROR_CASES = {  # name -> template; each is rendered with the "user" conversation
    "unclosed_for": "line 1\n{% for m in messages %}\n{{ m.role }}\n",
    "unknown_end_tag": "{% if messages %}\nyes\n{% endfor %}",
    "bad_expression": "ok\n\n{{ 1 + }}",
    "unterminated_string": "a\n{{ 'abc }}",
    "unknown_filter": "x\n{{ messages | frobnicate }}",
    "unknown_filter_not_run": "{% if false %}\n\n{{ 1 | frobnicate }}{% endif %}",
    "unknown_test": "\n{{ 1 is frobbed }}",
    "raise_exception": "l1\nl2\n{% if true %}\n  {{ raise_exception('Bad conversation: ' ~ messages | length) }}\n{% endif %}",
    "undefined_attribute": "\n\n{{ nothing.attr }}",
    "type_error": "\n{{ 1 + 'a' }}",
    "set_non_namespace": "{% set x = 1 %}\n{% set x.y = 2 %}",
    "missing_endif": "{% if true %}\n{% elif false %}\nx",
    "unpack": "{% for a, b in [[1, 2, 3]] %}\n{{ a }}{% endfor %}",
    "divide_by_zero": "\n\n\n{{ 1 // 0 }}",
    "call_undefined": "{{ foo() }}",
    "break_outside_loop": "a\n{% break %}",
    "string_plus_undefined": "{{ 'a' + messages[0].nothing }}",
}


def pinned_strftime(fmt):
    return PINNED_NOW.strftime(fmt)


def render(template_text, tokens, conversation, add_generation_prompt):
    compiled = _compile_jinja_template(template_text)
    kwargs = dict(tokens)
    kwargs.update(conversation.get("extra", {}))
    return compiled.render(messages=conversation["messages"], tools=conversation.get("tools"), documents=None,
                           add_generation_prompt=add_generation_prompt, strftime_now=pinned_strftime, **kwargs)


def error_record(exc):
    line = getattr(exc, "lineno", None)
    if line is None:  # runtime errors: jinja2 rewrites tracebacks so template frames carry template lines
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == "<template>":
                line = frame.lineno
    return {"type": type(exc).__name__, "message": str(exc), "line": line}


def case_input(conversation, tokens, add_generation_prompt):
    record = {"messages": conversation["messages"], "add_generation_prompt": add_generation_prompt}
    record.update(tokens)
    if "tools" in conversation:
        record["tools"] = conversation["tools"]
    if "extra" in conversation:
        record["extra"] = conversation["extra"]
    return record


def main():
    if not transformers.__version__.startswith("4.45.") or not jinja2.__version__.startswith("3.1."):
        sys.exit(f"need transformers 4.45.x and jinja2 3.1.x, have {transformers.__version__}, {jinja2.__version__}")
    cases = []
    for path in sorted((FIXTURES / "templates").glob("*.jinja")):
        text = path.read_text(encoding="utf-8")
        name = path.stem
        tokens = TOKENS.get(name, SYNTHETIC_TOKENS)
        for conv_name, conversation in CONVERSATIONS.items():
            for agp in (False, True):
                record = {"template": name, "conversation": conv_name,
                          "input": case_input(conversation, tokens, agp)}
                try:
                    record["expected"] = render(text, tokens, conversation, agp)
                except Exception as exc:  # noqa: BLE001 - the fixture records what jinja2 raised
                    record["error"] = error_record(exc)
                cases.append(record)
    errors = []
    for name, text in ERROR_CASES.items():
        record = {"name": name, "template": text, "input": case_input(CONVERSATIONS["user"], SYNTHETIC_TOKENS, False)}
        try:
            record["unexpected_render"] = render(text, SYNTHETIC_TOKENS, CONVERSATIONS["user"], False)
        except Exception as exc:  # noqa: BLE001
            record["error"] = error_record(exc)
        errors.append(record)
    with open(FIXTURES / "cases.jsonl", "w", encoding="utf-8") as f:
        for record in cases:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(FIXTURES / "errors.jsonl", "w", encoding="utf-8") as f:
        for record in errors:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    rendered = sum(1 for c in cases if "expected" in c)
    print(f"{len(cases)} cases ({rendered} renders, {len(cases) - rendered} errors) over "
          f"{len(list((FIXTURES / 'templates').glob('*.jinja')))} templates; {len(errors)} error cases")


if __name__ == "__main__":
    main()
