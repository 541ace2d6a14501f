#!/usr/bin/env python3
"""The finished runs of a scripts/study.sh directory as one small CSV, and back: what docs/ keeps of a study so
that a later sitting continues it (study.sh --import) without the run directories. Standard library only.

usage: study_csv.py export OUT CSV --steps N     rows of every finished OUT/METHOD-sSEED run, and the start
       study_csv.py import CSV OUT --steps N     recreates metrics.jsonl / eval.jsonl of the runs OUT lacks
Columns: run, step, then the curves study_report.py draws (per step) and the final evaluation (at step N; the
row of run `start`, step 0, is the shared SFT checkpoint's).
"""
import argparse
import csv
import json
import os
import re
import sys

CURVES = ["accuracy", "entropy_mean", "response_length_mean", "cov_frac"]
EVAL = ["greedy_accuracy", "greedy_mean_length", "pass@1", "pass@2", "pass@4"]
RUN = re.compile(r"^[a-z0-9_.]+-s[0-9]+$")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def short(x):
    return "" if x is None else f"{x:.8g}"


def export(out, path, steps):
    rows = []
    start = open(os.path.join(out, "sft-eval.txt")).read() if os.path.exists(os.path.join(out, "sft-eval.txt")) else ""
    found = dict(re.findall(r"(greedy accuracy|pass@\d) ([0-9.]+)", start))
    if found:
        rows.append(["start", 0] + [""] * len(CURVES) +
                    [found.get(k.replace("greedy_accuracy", "greedy accuracy"), "") for k in EVAL])
    for name in sorted(os.listdir(out)):
        run = os.path.join(out, name)
        if not RUN.match(name) or not os.path.exists(os.path.join(run, "eval.jsonl")):
            continue
        final = [e for e in read_jsonl(os.path.join(run, "eval.jsonl")) if e["step"] == steps]
        metrics = read_jsonl(os.path.join(run, "metrics.jsonl"))
        if not final or len(metrics) < steps:
            continue  # not finished
        for m in metrics[:steps]:
            last = m["step"] == steps
            rows.append([name, m["step"]] + [short(m.get(k)) for k in CURVES] +
                        [short(final[-1].get(k)) if last else "" for k in EVAL])
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        csv.writer(f).writerows([["run", "step"] + CURVES + EVAL] + rows)
    os.replace(tmp, path)
    print(f"study_csv: {len({r[0] for r in rows if r[0] != 'start'})} finished runs -> {path}")


def present(row, keys):
    """The keys of ROW that have a value (a run without pass@4, or before cov_frac existed, has none)."""
    return {k: float(row[k]) for k in keys if row.get(k, "") != ""}


def import_(path, out, steps):
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    runs = {}
    for r in table:
        runs.setdefault(r["run"], []).append(r)
    os.makedirs(out, exist_ok=True)
    made = 0
    for name, rows in runs.items():
        if name == "start":
            target = os.path.join(out, "sft-eval.txt")
            if not os.path.exists(target):
                r = rows[0]
                parts = [f"greedy accuracy {r['greedy_accuracy']}"] + [f"{k} {r[k]}" for k in EVAL[2:] if r[k]]
                open(target, "w").write("(imported) " + " | ".join(parts) + "\n")
            continue
        run = os.path.join(out, name)
        if os.path.exists(os.path.join(run, "eval.jsonl")):
            continue  # OUT has its own copy of this run
        if len(rows) != steps or rows[-1][EVAL[0]] == "":
            sys.exit(f"study_csv: {path}: run {name} has {len(rows)} steps and no final evaluation at step {steps}")
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps({"step": int(r["step"]), **present(r, CURVES)}) + "\n")
        with open(os.path.join(run, "eval.jsonl"), "w") as f:
            f.write(json.dumps({"step": steps, **present(rows[-1], EVAL)}) + "\n")
        made += 1
    print(f"study_csv: imported {made} runs from {path} into {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["export", "import"])
    ap.add_argument("source")
    ap.add_argument("target")
    ap.add_argument("--steps", type=int, required=True)
    a = ap.parse_args()
    export(a.source, a.target, a.steps) if a.action == "export" else import_(a.source, a.target, a.steps)


if __name__ == "__main__":
    main()
