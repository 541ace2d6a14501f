#!/usr/bin/env python3
"""Summarises scripts/compare.sh runs: a markdown table of final greedy accuracy and pass@k (mean ± std over
seeds) and PNG curves of reward, accuracy, entropy and response length over RL steps (mean over seeds).

usage: compare_report.py RUNS_DIR --algos grpo gtpo ... --seeds 0 1 2
Reads RUNS_DIR/ALGO-sSEED/{eval.jsonl,metrics.jsonl}; writes RUNS_DIR/table.md and RUNS_DIR/*.png.
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

    rows, curves = [], {}
    pass_keys = None
    for algo in args.algos:
        finals, starts, passes, series = [], [], {}, []
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
            series.append(read_jsonl(os.path.join(run, "metrics.jsonl")))
        if not finals:
            continue
        rows.append((algo, len(finals), mean_std(starts), mean_std(finals), {k: mean_std(v) for k, v in passes.items()}))
        curves[algo] = series

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

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare_report: matplotlib missing (scripts/setup.sh --plots): no plots", file=sys.stderr)
        return
    panels = [("reward_mean", "reward (kept groups)"), ("accuracy", "rollout accuracy"),
              ("entropy_mean", "rollout entropy"), ("response_length_mean", "response length")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (key, title) in zip(axes.flat, panels):
        for algo, series in curves.items():
            steps = min(len(s) for s in series)
            ys = [sum(s[i][key] for s in series) / len(series) for i in range(steps)]
            # A moving average keeps the curves readable at small batch sizes.
            w = max(1, steps // 30)
            smooth = [sum(ys[max(0, i - w + 1):i + 1]) / len(ys[max(0, i - w + 1):i + 1]) for i in range(steps)]
            ax.plot(range(1, steps + 1), smooth, label=algo)
        ax.set_title(title)
        ax.set_xlabel("RL step")
    axes.flat[0].legend()
    fig.tight_layout()
    path = os.path.join(args.runs, "curves.png")
    fig.savefig(path, dpi=100)
    print(f"plots: {path}")


if __name__ == "__main__":
    main()
