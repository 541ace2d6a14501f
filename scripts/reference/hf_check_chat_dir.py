#!/usr/bin/env python3
"""Checks that a directory gtpo wrote (a training checkpoint, gtpo export) keeps its chat template and
special tokens for transformers: AutoTokenizer.from_pretrained(DIR).apply_chat_template(messages,
add_generation_prompt=True) must give, for every case of EXPECTED.json (scripts/reference/hf_chat_model.py),
the text and ids transformers gave on the original Hugging Face directory, and the eos token must survive.
Prints one summary line; exits 1 naming the first mismatch.

usage: $GTPO_HF_PYTHON scripts/reference/hf_check_chat_dir.py DIR EXPECTED.json
"""
import json
import sys

from transformers import AutoTokenizer


def main(model_dir, expected_path):
    expected = json.load(open(expected_path))
    tok = AutoTokenizer.from_pretrained(model_dir)
    for i, case in enumerate(expected["cases"]):
        text = tok.apply_chat_template(case["messages"], tokenize=False, add_generation_prompt=True)
        ids = tok.apply_chat_template(case["messages"], tokenize=True, add_generation_prompt=True)
        if text != case["text"] or list(ids) != case["ids"]:
            print(f"case {i}: {model_dir} renders {text!r} -> {list(ids)}, expected {case['text']!r} -> {case['ids']}")
            return 1
    if tok.eos_token_id != expected["eos_token_ids"][0]:
        print(f"eos_token_id {tok.eos_token_id}, expected {expected['eos_token_ids'][0]}")
        return 1
    print(f"{model_dir}: {len(expected['cases'])} conversations render and tokenize as the original")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
