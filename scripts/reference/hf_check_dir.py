#!/usr/bin/env python3
"""Scores token sequences with transformers' AutoModelForCausalLM.from_pretrained(DIR): the transformers
side of the check that directories gtpo writes (gtpo init, gtpo export) load in transformers as they are
and give gtpo's log-probs (tests/apps/test_hf_export.cpp compares the two).

Input: gtpo score's JSONL ({"tokens": [ids], "prompt_len": k} per line). Output: one line per input,
{"logprobs": [...]} for positions prompt_len .. len-1 (log p(token_j | tokens < j), temperature 1), as
gtpo score writes them. The model runs in float32 with eager attention (a bf16 directory is widened).
Also checks that AutoModelForCausalLM picked the class config.json names.

usage: $GTPO_HF_PYTHON scripts/reference/hf_check_dir.py DIR IN.jsonl OUT.jsonl
"""
import json
import sys

import torch
from transformers import AutoModelForCausalLM


def main(model_dir, in_path, out_path):
    config = json.load(open(f"{model_dir}/config.json"))
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    assert type(model).__name__ == config["architectures"][0], (type(model).__name__, config["architectures"])
    lines = []
    with torch.no_grad():
        for line in open(in_path):
            if not line.strip():
                continue
            item = json.loads(line)
            tokens, k = item["tokens"], item["prompt_len"]
            logits = model(torch.tensor([tokens])).logits[0].double()
            lp = torch.log_softmax(logits, dim=-1)
            lines.append(json.dumps({"logprobs": [float(lp[j - 1, tokens[j]]) for j in range(max(k, 1), len(tokens))]}))
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
