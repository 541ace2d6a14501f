#!/usr/bin/env python3
"""Summarises scripts/compare.sh runs: a markdown table of final greedy accuracy and pass@k (mean ± std over
seeds). The curves are in the runs' HTML report (`gtpo report`, which compare.sh writes beside the table).

usage: compare_report.py RUNS_DIR --algos grpo gtpo ... --seeds 0 1 2
Reads RUNS_DIR/ALGO-sSEED/{eval.jsonl,metrics.jsonl}; writes RUNS_DIR/table.md.
"""
import argparse
import json
import math
import os
import sys


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mean_std(values):
    if not values:
        return float("nan"), float("nan")
    m = sum(values) / len(values)
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--algos", nargs="+", required=True)
    ap.add_argument("--seeds", nargs="+", required=True)
    args = ap.parse_args()

    rows = []
    pass_keys = None
    for algo in args.algos:
        finals, starts, passes = [], [], {}
        for seed in args.seeds:
            run = os.path.join(args.runs, f"{algo}-s{seed}")
            if not os.path.exists(os.path.join(run, "eval.jsonl")):
                print(f"compare_report: {run} has no eval.jsonl: skipped", file=sys.stderr)
                continue
            evals = read_jsonl(os.path.join(run, "eval.jsonl"))
            starts.append(evals[0]["greedy_accuracy"])
            finals.append(evals[-1]["greedy_accuracy"])
            keys = sorted((k for k in evals[-1] if k.startswith("pass@")), key=lambda k: int(k[5:]))
            pass_keys = pass_keys or keys
            for k in keys:
                passes.setdefault(k, []).append(evals[-1][k])
        if not finals:
            continue
        rows.append((algo, len(finals), mean_std(starts), mean_std(finals), {k: mean_std(v) for k, v in passes.items()}))

    lines = ["| algorithm | seeds | greedy acc. at start | final greedy acc. | " +
             " | ".join(f"final {k}" for k in pass_keys or []) + " |",
             "|" + "---|" * (4 + len(pass_keys or []))]
    for algo, n, (s0, _), (m, s), p in rows:
        cells = " | ".join(f"{p[k][0]:.3f} ± {p[k][1]:.3f}" for k in pass_keys or [])
        lines.append(f"| {algo} | {n} | {s0:.3f} | {m:.3f} ± {s:.3f} | {cells} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.runs, "table.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
