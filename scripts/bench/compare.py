#!/usr/bin/env python3
"""Prints the markdown table of gtpo vs PyTorch benchmark results (issue 7).

usage: compare.py GTPO_JSONL PYTORCH_JSONL

Each file holds one JSON object per line, as printed by `gtpo bench --json` and scripts/bench/torch_bench.py:
{"impl", "workload", "shape", "threads", "tokens_per_s", "runs", "peak_rss_mb", "gflops", ...}. A missing or
empty gtpo file gives a PyTorch-only table. When a (impl, workload, shape) appears several times (run.sh
--rounds), the median throughput and the largest peak RSS are used. Standard library only.
"""
import json
import statistics
import sys

# Issue 7 targets: gtpo/PyTorch throughput ratio; memory must be <= PyTorch's on every workload.
SPEED_TARGETS = {("train", "small"): 1.5, ("train", "gpt2-124m"): 1.0, ("rollout", "small"): 5.0}
ORDER = ["train", "rollout", "rollout-naive"]
SHAPE_ORDER = ["small", "gpt2-124m"]


def load(path):
    rows = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"compare: {path}:{n}: not JSON, skipped: {line[:80]}", file=sys.stderr)
    except FileNotFoundError:
        print(f"compare: {path} not found; that side is left empty", file=sys.stderr)
    return rows


def merge(rows):
    """{(workload, shape): merged record} for one impl; sgemm has no shape."""
    groups = {}
    for r in rows:
        key = (r["workload"], "-" if r["workload"] == "sgemm" else r.get("shape") or "-")
        groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        m = dict(rs[-1])
        for field in ("tokens_per_s", "gflops", "decode_tokens_per_s"):
            vals = [r[field] for r in rs if r.get(field) is not None]
            m[field] = statistics.median(vals) if vals else None
        rss = [r["peak_rss_mb"] for r in rs if r.get("peak_rss_mb") is not None]
        m["peak_rss_mb"] = max(rss) if rss else None
        m["rounds"] = len(rs)
        out[key] = m
    return out


def fmt(x, spec=".1f", none="—"):
    return none if x is None else format(x, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def table(gtpo, torch):
    peaks = [r["gflops"] for side in (gtpo, torch) for k, r in side.items() if k[0] == "sgemm" and r.get("gflops")]
    peak = max(peaks) if peaks else None
    keys = sorted({k for side in (gtpo, torch) for k in side if k[0] != "sgemm"},
                  key=lambda k: (ORDER.index(k[0]) if k[0] in ORDER else len(ORDER), k[0],
                                 SHAPE_ORDER.index(k[1]) if k[1] in SHAPE_ORDER else len(SHAPE_ORDER), k[1]))
    lines = ["| workload | shape | gtpo tok/s | PyTorch tok/s | gtpo/PyTorch | target | gtpo peak RSS MB "
             "| PyTorch peak RSS MB | memory gtpo/PyTorch | gtpo % SGEMM peak | PyTorch % SGEMM peak | result |",
             "|" + "---|" * 12]
    for key in keys:
        g, t = gtpo.get(key, {}), torch.get(key, {})
        if key[0] == "rollout-naive" and not g:
            # Informational: gtpo's shared-prefix rollout against PyTorch prefilling all 128 rows; no target.
            g = gtpo.get(("rollout", key[1]), {})
            _add_row(lines, "rollout vs PyTorch naive prefill", key[1], g, t, "tokens_per_s", None, peak, False)
            continue
        _add_row(lines, key[0], key[1], g, t, "tokens_per_s", SPEED_TARGETS.get(key), peak)
        if key[0] == "rollout" and (g.get("decode_tokens_per_s") or t.get("decode_tokens_per_s")):
            _add_row(lines, "rollout (decode only)", key[1], g, t, "decode_tokens_per_s", None, None)
    return lines, peak


def _add_row(lines, workload, shape, g, t, field, target, peak, judge_memory=True):
    gs, ts = g.get(field), t.get(field)
    speed = ratio(gs, ts)
    mem = ratio(g.get("peak_rss_mb"), t.get("peak_rss_mb")) if field == "tokens_per_s" else None
    verdicts = []
    if target is not None:
        verdicts.append("n/a" if speed is None else "speed PASS" if speed >= target else
                        f"speed MISS ({speed:.2f}× < {target}×)")
    if field == "tokens_per_s" and mem is not None and judge_memory:
        verdicts.append("memory PASS" if mem <= 1.0 else f"memory MISS ({mem:.2f}×)")
    rss_t = fmt(t.get("peak_rss_mb"), ".0f")
    if t.get("peak_rss_delta_mb") is not None and field == "tokens_per_s":
        rss_t += f" (Δ {t['peak_rss_delta_mb']:.0f})"
    pct = (lambda r: fmt(100 * r["gflops"] / peak if r.get("gflops") and peak else None, ".0f") + (
        "%" if r.get("gflops") and peak else ""))
    lines.append(f"| {workload} | {shape} | {fmt(gs)} | {fmt(ts)} | {fmt(speed, '.2f')}{'×' if speed else ''} "
                 f"| {f'≥ {target}×' if target else ''} "
                 f"| {fmt(g.get('peak_rss_mb'), '.0f') if field == 'tokens_per_s' else ''} "
                 f"| {rss_t if field == 'tokens_per_s' else ''} | {fmt(mem, '.2f')}{'×' if mem else ''} "
                 f"| {pct(g) if field == 'tokens_per_s' else ''} | {pct(t) if field == 'tokens_per_s' else ''} "
                 f"| {', '.join(verdicts)} |")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    gtpo, torch = merge(load(argv[1])), merge(load(argv[2]))
    lines, peak = table(gtpo, torch)
    sg, st = gtpo.get(("sgemm", "-"), {}), torch.get(("sgemm", "-"), {})
    lines.append("")
    lines.append(f"Measured SGEMM peak (max over transformer-shaped torch.mm / gtpo GEMMs, GFLOP/s): "
                 f"gtpo {fmt(sg.get('gflops'))}, PyTorch {fmt(st.get('gflops'))}; "
                 f"% columns use the larger, {fmt(peak)}.")
    threads = {r.get("threads") for side in (gtpo, torch) for r in side.values()}
    lines.append(f"Threads: {', '.join(str(t) for t in sorted(threads, key=str))}."
                 + (" WARNING: the two sides ran with different thread counts." if len(threads) > 1 else ""))
    blas = {r.get("blas") for r in torch.values() if r.get("blas")}
    if blas:
        lines.append(f"PyTorch {next(iter(torch.values())).get('torch_version', '')} BLAS: {', '.join(sorted(blas))}."
                     + (" WARNING: this is the netlib reference BLAS (single-threaded, unoptimised), a weak "
                        "baseline; see run.sh --torch-blas-dir." if any("/blas/libblas" in b for b in blas) else ""))
    loads = [r["load_avg_1m"] for side in (gtpo, torch) for r in side.values() if r.get("load_avg_1m") is not None]
    if loads:
        lines.append(f"1-minute load average when runs started: {min(loads):.1f}–{max(loads):.1f}"
                     + (f" (above the thread count: other work shared the CPUs; expect noise)."
                        if max(loads) > max([t for t in threads if t] or [0]) + 0.5 else "."))
    lines.append("PyTorch peak RSS includes the torch import (~250 MB here); Δ is the growth after model build.")
    if not gtpo:
        lines.append("No gtpo results: PyTorch side only.")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
