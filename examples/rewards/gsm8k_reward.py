#!/usr/bin/env python3
"""A GSM8K-style external reward for gtpo (protocol: docs/rewards.md).

gtpo starts this once and keeps it running. It writes one JSON request per line on stdin, all of a
rollout round's completions in a row ("batch_size" says how many), then reads one JSON reply per line,
in the same order. This script answers line by line; a batching one could read batch_size lines first.

Reward: 1 when the number after the completion's last "####" equals the answer in the dataset row's
"answer" column (GSM8K rows hold "reasoning #### 42"; gtpo's own rows hold "42"), plus 0.1 when the
answer line is the completion's last line. It says "correct" itself, so gtpo's O+/O- follow the match.
Components (logged as rewards/NAME/match/mean, ...): match, format.
"""
import json
import re
import sys

NUMBER = re.compile(r"-?\$?[\d,]*\.?\d+")


def final_answer(text):
    """The text after the last '####', up to the end of that line, or None."""
    at = text.rfind("####")
    if at < 0:
        return None, False
    rest = text[at + 4:]
    line, _, after = rest.partition("\n")
    return line.strip(), after.strip() == ""


def as_number(text):
    if text is None:
        return None
    m = NUMBER.search(text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", "").replace("$", ""))
    except ValueError:
        return None


def score(request):
    expected_text, _ = final_answer(str(request["row"].get("answer", "")))
    if expected_text is None:  # a row whose answer column is the bare answer
        expected_text = str(request["row"].get("answer", ""))
    got, clean = final_answer(request["completion"])
    expected, value = as_number(expected_text), as_number(got)
    match = expected is not None and value is not None and abs(expected - value) < 1e-9
    formatted = got is not None and clean
    reward = (1.0 if match else 0.0) + (0.1 if formatted else 0.0)
    return {"id": request["id"], "reward": reward, "correct": match,
            "components": {"match": float(match), "format": float(formatted)}}


for line in sys.stdin:
    print(json.dumps(score(json.loads(line))), flush=True)
