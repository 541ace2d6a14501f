#!/usr/bin/env python3
"""Summarises scripts/study.sh: final greedy accuracy and pass@k per method as mean ± 95% CI over seeds, each
method's paired difference with the baseline on the same seeds, and the curves of training accuracy, token
entropy and response length (mean over seeds) as a table and as an SVG. Standard library only.

usage: study_report.py OUT --steps N --methods grpo dapo ... --seeds 0 1 2 [--baseline dapo]
                       [--dose "alpha2:gtpo_a2_0=0,gtpo_a2_0.1=0.1,gtpo_a2_1=1" ...]
--dose NAME:ARM=VALUE,... adds a dose-response table: per seed, the least-squares slope of the final value on
the dose over the arms that seed finished (at least two doses), then mean ± 95% CI (t) of the slopes over seeds.
Reads OUT/sft-eval.txt (the shared start, `gtpo eval` output) and OUT/METHOD-sSEED/{eval,metrics}.jsonl.
Writes OUT/table.md and OUT/curves.svg, and prints the table.
"""
import argparse
import json
import math
import os
import re
import sys

# Two-sided 95% Student t critical values by degrees of freedom (1..30); beyond 30 the normal's 1.96 is close.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

CURVES = [("accuracy", "training accuracy (sampled)"), ("entropy_mean", "mean token entropy (nats)"),
          ("response_length_mean", "response length (tokens)")]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mean_ci(values):
    """Mean and half-width of the 95% t interval; the half-width is nan for fewer than 2 values."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n < 2:
        return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    t = T95[n - 2] if n - 1 <= len(T95) else 1.96
    return m, t * sd / math.sqrt(n)


def fmt(m, h, digits=3):
    if math.isnan(m):
        return "—"
    return f"{m:.{digits}f}" if math.isnan(h) else f"{m:.{digits}f} ± {h:.{digits}f}"


def slope(points):
    """Least-squares slope of y on x; nan with fewer than two distinct x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n if n else 0.0
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if n < 2 or sxx == 0:
        return float("nan")
    my = sum(y for _, y in points) / n
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def dose_lines(spec, finals, seeds, keys):
    """The dose-response table of one --dose NAME:ARM=VALUE,... spec."""
    name, _, arms_text = spec.partition(":")
    arms = [(a.split("=")[0], float(a.split("=")[1])) for a in arms_text.split(",") if a]
    lines = ["", f"Dose-response on {name} (arms " + ", ".join(f"{a} = {v:g}" for a, v in arms) +
             "): per seed, the least-squares slope of the final value on " + name +
             ", then mean ± 95% CI over seeds:", "",
             "| value | seeds | slope | mean at each dose |", "|---|---|---|---|"]
    for key in keys:
        slopes, per_dose = [], {v: [] for _, v in arms}
        for s in seeds:
            pts = [(v, finals[a][s][key]) for a, v in arms if a in finals and s in finals[a] and key in finals[a][s]]
            for v, y in pts:
                per_dose[v].append(y)
            if len({v for v, _ in pts}) >= 2:
                slopes.append(slope(pts))
        means = ", ".join(f"{v:g}: {fmt(*mean_ci(ys))}" for v, ys in per_dose.items() if ys)
        lines.append(f"| {key} | {len(slopes)} | {fmt(*mean_ci(slopes))} | {means} |")
    return lines


def parse_gtpo_eval(path):
    """`gtpo eval`'s line: problems N | greedy accuracy A | mean@K M | pass@1 P1 | ... | S s"""
    if not os.path.exists(path):
        return {}
    text = open(path).read()
    out = {}
    m = re.search(r"greedy accuracy ([0-9.]+)", text)
    if m:
        out["greedy_accuracy"] = float(m.group(1))
    for k, v in re.findall(r"pass@(\d+) ([0-9.]+)", text):
        out[f"pass@{k}"] = float(v)
    return out


def smooth(values, window):
    out = []
    for i in range(len(values)):
        lo = max(0, i - window + 1)
        chunk = [v for v in values[lo:i + 1] if v is not None]
        out.append(sum(chunk) / len(chunk) if chunk else None)
    return out


def mean_curves(runs, key, steps):
    """Per step, the mean over runs of metrics[key] (None where no run has it)."""
    out = []
    for s in range(steps):
        vals = [r[s][key] for r in runs if s < len(r) and r[s].get(key) is not None]
        out.append(sum(vals) / len(vals) if vals else None)
    return out


def svg_curves(curves_by_method, steps, path):
    """Three panels side by side, one line per method (mean over seeds, 5-step moving average)."""
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
              "#17becf"]
    width, height, pad = 330, 230, 42
    parts = []
    for p, (key, title) in enumerate(CURVES):
        x0 = p * (width + 20)
        series = {m: smooth(c[key], 5) for m, c in curves_by_method.items()}
        vals = [v for s in series.values() for v in s if v is not None]
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        if hi - lo < 1e-9:
            hi = lo + 1
        span = hi - lo
        lo, hi = lo - 0.05 * span, hi + 0.05 * span
        sx = lambda i: x0 + pad + (width - pad - 8) * i / max(1, steps - 1)
        sy = lambda v: 20 + (height - 20 - pad) * (1 - (v - lo) / (hi - lo))
        parts.append(f'<text x="{x0 + width / 2}" y="13" text-anchor="middle" font-size="12">{title}</text>')
        parts.append(f'<rect x="{x0 + pad}" y="20" width="{width - pad - 8}" height="{height - 20 - pad}" '
                     'fill="none" stroke="#999"/>')
        for frac in (0, 0.5, 1):
            v = lo + (hi - lo) * frac
            parts.append(f'<text x="{x0 + pad - 4}" y="{sy(v) + 4:.1f}" text-anchor="end" font-size="10">{v:.3g}</text>')
        for i in (0, steps - 1):
            parts.append(f'<text x="{sx(i):.1f}" y="{height - pad + 14}" text-anchor="middle" font-size="10">{i + 1}</text>')
        parts.append(f'<text x="{x0 + pad + (width - pad) / 2}" y="{height - pad + 28}" text-anchor="middle" '
                     'font-size="10">RL step</text>')
        for j, (m, s) in enumerate(series.items()):
            pts = " ".join(f"{sx(i):.1f},{sy(v):.1f}" for i, v in enumerate(s) if v is not None)
            parts.append(f'<polyline fill="none" stroke="{colors[j % len(colors)]}" stroke-width="1.5" points="{pts}"/>')
    legend_y = height + 10
    for j, m in enumerate(curves_by_method):
        x = 10 + (j % 5) * 200
        y = legend_y + (j // 5) * 16
        parts.append(f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colors[j % len(colors)]}" stroke-width="2"/>')
        parts.append(f'<text x="{x + 25}" y="{y + 4}" font-size="11">{m}</text>')
    total_h = legend_y + 16 * ((len(curves_by_method) + 4) // 5) + 6
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * width + 40}" height="{total_h}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>\n")
    with open(path + ".new", "w") as f:
        f.write(svg)
    os.replace(path + ".new", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--methods", nargs="+", required=True)
    ap.add_argument("--seeds", nargs="+", required=True)
    ap.add_argument("--baseline", default="dapo")
    ap.add_argument("--dose", action="append", default=[], help="NAME:ARM=VALUE,... (see the module doc)")
    args = ap.parse_args()

    start = parse_gtpo_eval(os.path.join(args.out, "sft-eval.txt"))
    finals = {}  # method -> seed -> final eval row
    metrics = {}  # method -> seed -> metrics rows
    for m in args.methods:
        for seed in args.seeds:
            run = os.path.join(args.out, f"{m}-s{seed}")
            try:
                evals = [e for e in read_jsonl(os.path.join(run, "eval.jsonl")) if e["step"] == args.steps]
                rows = read_jsonl(os.path.join(run, "metrics.jsonl"))
            except FileNotFoundError:
                continue
            if not evals or len(rows) < args.steps:
                print(f"study_report: {run} is not finished: skipped", file=sys.stderr)
                continue
            finals.setdefault(m, {})[seed] = evals[-1]
            metrics.setdefault(m, {})[seed] = rows[:args.steps]
    if not finals:
        sys.exit("study_report: no finished runs under " + args.out)
    pass_keys = sorted({k for rows in finals.values() for e in rows.values() for k in e if k.startswith("pass@")},
                       key=lambda k: int(k[5:]))

    lines = [f"Start (the shared SFT checkpoint): greedy accuracy {start.get('greedy_accuracy', float('nan')):.3f}" +
             "".join(f", {k} {start[k]:.3f}" for k in pass_keys if k in start) + ".", "",
             f"Final evaluation after {args.steps} RL steps, mean ± 95% CI (t) over seeds:", "",
             "| method | seeds | greedy acc. | " + " | ".join(pass_keys) + " | greedy length |",
             "|" + "---|" * (4 + len(pass_keys))]
    for m in args.methods:
        if m not in finals:
            continue
        rows = list(finals[m].values())
        cells = [fmt(*mean_ci([r["greedy_accuracy"] for r in rows]))]
        cells += [fmt(*mean_ci([r[k] for r in rows if k in r])) for k in pass_keys]
        cells.append(fmt(*mean_ci([r.get("greedy_mean_length", float("nan")) for r in rows]), 1))
        lines.append(f"| {m} | {len(rows)} | " + " | ".join(cells) + " |")

    base = finals.get(args.baseline, {})
    if base:
        lines += ["", f"Paired with {args.baseline} on the same seeds (method − {args.baseline}), mean ± 95% CI; "
                  "wins / ties / losses count seeds:", "",
                  "| method | pairs | Δ greedy acc. | W/T/L | " + " | ".join(f"Δ {k}" for k in pass_keys) + " |",
                  "|" + "---|" * (4 + len(pass_keys))]
        for m in args.methods:
            if m == args.baseline or m not in finals:
                continue
            seeds = [s for s in args.seeds if s in finals[m] and s in base]
            if not seeds:
                continue
            d = [finals[m][s]["greedy_accuracy"] - base[s]["greedy_accuracy"] for s in seeds]
            wtl = f"{sum(x > 0 for x in d)}/{sum(x == 0 for x in d)}/{sum(x < 0 for x in d)}"
            cells = [fmt(*mean_ci([finals[m][s][k] - base[s][k] for s in seeds])) for k in pass_keys]
            lines.append(f"| {m} | {len(seeds)} | {fmt(*mean_ci(d))} | {wtl} | " + " | ".join(cells) + " |")

    for spec in args.dose:
        lines += dose_lines(spec, finals, args.seeds, ["greedy_accuracy"] + pass_keys)

    curves = {m: {key: mean_curves(list(metrics[m].values()), key, args.steps) for key, _ in CURVES}
              for m in args.methods if m in metrics}
    marks = sorted({1, *range(10, args.steps + 1, 10), args.steps})
    lines += ["", "Curves, mean over seeds (each value averages the 5 steps ending at that step): "
              "training accuracy / token entropy / response length.", "",
              "| method | " + " | ".join(f"step {s}" for s in marks) + " |", "|" + "---|" * (1 + len(marks))]
    for m, c in curves.items():
        cells = []
        for s in marks:
            vals = [smooth(c[key], 5)[s - 1] for key, _ in CURVES]
            digits = (2, 3, 0)  # accuracy, entropy (small after SFT), length in tokens
            cells.append(" / ".join("—" if v is None else f"{v:.{digits[i]}f}" for i, v in enumerate(vals)))
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "table.md.new"), "w") as f:
        f.write(table)
    os.replace(os.path.join(args.out, "table.md.new"), os.path.join(args.out, "table.md"))
    svg_curves(curves, args.steps, os.path.join(args.out, "curves.svg"))
    print(table)
    print(f"study_report: wrote {args.out}/table.md and {args.out}/curves.svg")


if __name__ == "__main__":
    main()
