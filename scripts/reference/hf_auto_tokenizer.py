#!/usr/bin/env python3
"""Encodes {"text": ...} JSONL lines with transformers' AutoTokenizer.from_pretrained(DIR) and writes
{"ids": [...], "text": decode(ids)} lines: the other side of tests/apps/test_tokenize_hf.cpp, which checks
that a directory gtpo saved (tokenizer.json + tokenizer_config.json) loads in transformers and gives gtpo's ids.

  "$GTPO_HF_PYTHON" scripts/reference/hf_auto_tokenizer.py DIR IN.jsonl OUT.jsonl
"""
import json
import sys

from transformers import AutoTokenizer


def main():
    directory, source, target = sys.argv[1:4]
    tok = AutoTokenizer.from_pretrained(directory)
    with open(source, encoding="utf-8") as f, open(target, "w", encoding="utf-8") as out:
        for line in f:
            if not line.strip():
                continue
            text = json.loads(line)["text"]
            ids = tok(text)["input_ids"]
            out.write(json.dumps({"ids": ids, "text": tok.decode(ids), "vocab": len(tok)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
