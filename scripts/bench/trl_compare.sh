#!/usr/bin/env bash
# The RL step side by side with TRL's GRPOTrainer (issue 18): runs gtpo's RL job (`gtpo train`) and the same
# job in TRL (scripts/bench/trl_bench.py), alternately in fresh processes for K pairs, and prints a table of
# medians with gtpo/TRL ratios (whole step, rollout, update, generated tokens/s, peak RSS, greedy accuracy).
#
# usage: scripts/bench/trl_compare.sh [--workload quick|large] [--pairs K] [--steps N] [--skip S]
#                                     [--threads T] [--out DIR]
#   --workload   quick: configs/quickstart.yaml (default); large: configs/bench-trl-large.yaml (8.9M
#                parameters, 128-token responses)
#   --pairs K    gtpo/TRL pairs, the order alternating per pair (default 5)
#   --steps N    RL steps per run (default 30)
#   --skip S     first steps of each run left out of the medians (warm-up; default 1)
#   --threads T  both sides (default: nproc)
#   --out DIR    work directory (default runs/trl-compare/WORKLOAD); results.jsonl and table.md go there
#   --report     run nothing: print the table of the runs already in DIR/results.jsonl (e.g. of a stopped run)
#
# The same job on both sides: the SFT checkpoint `gtpo sft CONFIG` writes (made once, reused from DIR/sft),
# loaded by gtpo (train.init_from, sft.steps=0) and by transformers (AutoModelForCausalLM, the tokenizer as a
# PreTrainedTokenizerFast); rl.algo=grpo (TRL has neither GTPO's entropy shaping nor dynamic sampling, so both
# run GRPO: clip 0.2/0.2, seq-mean-token-mean, no KL, one optimiser step per RL step); the config's group size,
# temperature, max_new_tokens, lr and prompts per step. The prompts of each step, in order, are written by a
# throw-away gtpo run of a tiny model with train.sample_every=1 (without dynamic sampling the prompt stream is
# the train split in index order, whatever the model; this script checks the indices); the test prompts by
# `gtpo eval --out` on the SFT checkpoint. Accuracy: greedy, on the config's eval.num_problems test problems,
# by `gtpo eval` on both final models (TRL's is saved with save_pretrained; trl_bench.py's own greedy accuracy
# is kept in results.jsonl as a cross-check). Peak RSS: /usr/bin/time -v of each whole process.
# Both sides get OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=20000 (what gtpo picks for itself; see run.sh) and
# the same thread count. The load average (uptime) before each run is recorded: on a shared machine the
# figures are only as good as the load column says; with other work on the cores, --threads 1 measures the
# engines, more threads mostly the contention (docs/performance.md, "Against TRL's GRPOTrainer").
set -uo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-20000}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gtpo="${GTPO_BUILD_DIR:-$root/build}/gtpo"
workload=quick pairs=5 steps=30 skip=1 threads="$(nproc)" out="" report_only=0
die() { echo "trl_compare.sh: $*" >&2; exit 2; }
is_int() { [[ "$1" =~ ^[0-9]+$ ]]; }
while [ $# -gt 0 ]; do
  case "$1" in
    --workload) [ $# -ge 2 ] || die "--workload needs a value"; workload="$2"; shift 2 ;;
    --pairs) [ $# -ge 2 ] && is_int "$2" && [ "$2" -ge 1 ] || die "--pairs needs an integer >= 1"; pairs="$2"; shift 2 ;;
    --steps) [ $# -ge 2 ] && is_int "$2" && [ "$2" -ge 2 ] || die "--steps needs an integer >= 2"; steps="$2"; shift 2 ;;
    --skip) [ $# -ge 2 ] && is_int "$2" || die "--skip needs an integer >= 0"; skip="$2"; shift 2 ;;
    --threads) [ $# -ge 2 ] && is_int "$2" && [ "$2" -ge 1 ] || die "--threads needs an integer >= 1"; threads="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --report) report_only=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$workload" in
  quick) config="$root/configs/quickstart.yaml" ;;
  large) config="$root/configs/bench-trl-large.yaml" ;;
  *) die "--workload must be quick or large, got '$workload'" ;;
esac
[ "$skip" -lt "$steps" ] || die "--skip ($skip) must be below --steps ($steps)"
[ -x "$gtpo" ] || { echo "trl_compare.sh: no $gtpo: build gtpo first (scripts/build.sh, or set GTPO_BUILD_DIR)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "trl_compare.sh: needs /usr/bin/time (apt-get install time) for peak RSS" >&2; exit 1; }
python="$(bash "$root/scripts/bench/trl_python.sh")" || { echo "trl_compare.sh: no TRL venv (scripts/bench/trl_python.sh failed)" >&2; exit 1; }
out="${out:-$root/runs/trl-compare/$workload}"
mkdir -p "$out" || exit 1
results="$out/results.jsonl"
print_table() {
  [ -s "$results" ] || { echo "trl_compare.sh: no results in $results" >&2; exit 1; }
  python3 - "$results" "$workload" "$steps" "$skip" "$threads" "$("$python" -c 'import trl, transformers, torch; print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")')" <<'EOF' | tee "$out/table.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
workload, steps, skip, threads, versions = sys.argv[2:7]
g = [r for r in rows if r["impl"] == "gtpo"]
t = [r for r in rows if r["impl"] == "trl"]
med = lambda rs, k: statistics.median(r[k] for r in rs)
def line(name, gk, tk, fmt, ratio=True):
    a, b = med(g, gk), med(t, tk)
    return f"| {name} | {fmt.format(a)} | {fmt.format(b)} | {a / b:.2f} |" if ratio else f"| {name} | {fmt.format(a)} | {fmt.format(b)} | |"
for r in g:
    r["tok_s"] = r["tokens_per_step"] / r["rollout_s"]
for r in t:
    r["tok_s"] = r["tokens_per_step"] / r["rollout_s"]
print(f"Workload {workload}: {len(g)} gtpo and {len(t)} TRL runs, alternating, {steps} RL steps each "
      f"(medians over steps {int(skip) + 1}..{steps} per run, then the median over runs), {threads} threads; {versions}\n")
print("| per RL step | gtpo | TRL | gtpo / TRL |")
print("|---|---|---|---|")
print(line("whole step (s)", "step_s", "step_s", "{:.3f}"))
print(line("rollout: generation + rewards + advantages (s)", "rollout_s", "rollout_s", "{:.3f}"))
print(f"| of which TRL's model.generate alone (s) | | {med(t, 'generate_s'):.3f} | |")
print(line("update: forward, backward, optimiser (s)", "update_s", "update_s", "{:.3f}"))
print(line("generated tokens / s of the rollout", "tok_s", "tok_s", "{:.0f}"))
print(line("generated tokens per step", "tokens_per_step", "tokens_per_step", "{:.0f}"))
print(line("peak RSS (MB, /usr/bin/time)", "peak_rss_mb", "peak_rss_mb_time", "{:.0f}"))
has_steps = all("per_step" in r for r in rows)
def p10(rs, k):  # per run: the 10th percentile over its steps (the least disturbed steps); median over runs
    q = lambda xs: statistics.quantiles(xs, n=10)[0] if len(xs) > 1 else xs[0]  # noqa: E731
    return statistics.median(q(r["per_step"][k]) for r in rs)
for k, name in (("step_s", "whole step"), ("rollout_s", "rollout"), ("update_s", "update")) if has_steps else ():
    a, b = p10(g, k), p10(t, k)
    print(f"| {name}, 10th percentile of the steps (s) | {a:.3f} | {b:.3f} | {a / b:.2f} |")
print(line(f"greedy accuracy after {steps} steps (gtpo eval)", "greedy_accuracy", "greedy_accuracy", "{:.3f}", ratio=False))
print(f"\nSFT checkpoint's greedy accuracy: {g[0]['greedy_accuracy_before']:.3f}. "
      f"TRL's own greedy accuracy (transformers generate): {', '.join('%.3f' % r['greedy_accuracy_own'] for r in t)}.")
print("\nPer run (pair: gtpo step/rollout/update s, RSS MB, acc, load | TRL the same):")
for p in sorted({r["pair"] for r in rows}):
    a = next(r for r in g if r["pair"] == p); b = next(r for r in t if r["pair"] == p)
    print(f"- {p}: gtpo {a['step_s']:.3f}/{a['rollout_s']:.3f}/{a['update_s']:.3f}, {a['peak_rss_mb']:.0f}, "
          f"{a['greedy_accuracy']:.3f}, load {a['load_before']} | TRL {b['step_s']:.3f}/{b['rollout_s']:.3f}/"
          f"{b['update_s']:.3f}, {b['peak_rss_mb_time']:.0f}, {b['greedy_accuracy']:.3f}, load {b['load_before']}")
EOF
}
if [ "$report_only" = 1 ]; then print_table; exit; fi

# A value of a resolved run config (YAML; the TRL venv has PyYAML).
value() { "$python" -c 'import sys, yaml; c = yaml.safe_load(open(sys.argv[1])); s, k = sys.argv[2].split("."); print(c[s][k])' "$1" "$2"; }

sft="$out/sft"
if [ ! -f "$sft/model.safetensors" ]; then
  echo "trl_compare.sh: SFT checkpoint -> $sft (gtpo sft $config)" >&2
  "$gtpo" sft "$config" train.threads="$threads" --out "$sft" > "$out/sft.log" 2>&1 ||
    { echo "trl_compare.sh: gtpo sft failed (see $out/sft.log)" >&2; exit 1; }
fi

# RL overrides shared by every gtpo run of this comparison.
common=(sft.steps=0 "train.init_from=$sft" rl.algo=grpo rl.dynamic_sampling=false "train.steps=$steps"
        "train.threads=$threads" eval.every=0 eval.k=1 train.sample_every=0)

# The prompts of each step: a tiny model's run (the prompt stream does not depend on the model without dynamic
# sampling), every response logged; one line per (step, problem).
prompts="$out/prompts-$steps.jsonl"
if [ ! -s "$prompts" ]; then
  echo "trl_compare.sh: writing the prompt stream -> $prompts" >&2
  "$gtpo" train "$config" sft.steps=0 rl.algo=grpo rl.dynamic_sampling=false "train.steps=$steps" \
      "train.threads=$threads" train.sample_every=1 log.samples=1000000 log.progress=false eval.every=0 \
      eval.num_problems=1 eval.k=1 model.hidden_size=16 model.num_hidden_layers=1 model.num_attention_heads=2 \
      model.num_key_value_heads=1 sampler.max_new_tokens=2 train.checkpoint_every=0 \
      "train.out_dir=$out/prompt-stream" --overwrite > "$out/prompt-stream.log" 2>&1 ||
    { echo "trl_compare.sh: the prompt-stream run failed (see $out/prompt-stream.log)" >&2; exit 1; }
  python3 - "$out/prompt-stream/samples.jsonl" "$prompts" "$(value "$sft/run_config.yaml" train.prompts_per_step)" <<'EOF' || exit 1
import json, sys
src, dst, per_step = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen, rows = set(), []
for line in open(src):
    r = json.loads(line)
    if (r["step"], r["problem"]) in seen:
        continue
    seen.add((r["step"], r["problem"]))
    want = (r["step"] - 1) * per_step + len([x for x in rows if x["step"] == r["step"]])
    if r["problem"] != want:
        sys.exit(f"trl_compare.sh: {src}: step {r['step']} has problem {r['problem']}, expected {want}: "
                 "the prompt stream is not the train split in order")
    rows.append({"step": r["step"], "problem": r["problem"], "prompt": r["prompt"], "answer": r["answer"]})
with open(dst, "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
EOF
fi

# Every value both sides need, from the SFT checkpoint's resolved run config (the workload's own values).
resolved="$sft/run_config.yaml"
pps="$(value "$resolved" train.prompts_per_step)" group="$(value "$resolved" sampler.group_size)"
temp="$(value "$resolved" sampler.temperature)" max_new="$(value "$resolved" sampler.max_new_tokens)"
lr="$(value "$resolved" optim.lr)" problems="$(value "$resolved" eval.num_problems)"
difficulty="$(value "$resolved" task.difficulty)" ops="$(value "$resolved" task.ops)"

test="$out/test-$problems.jsonl"
if [ ! -s "$test" ]; then
  "$gtpo" eval --checkpoint "$sft" -k 1 --problems "$problems" --out "$test" --threads "$threads" \
      > "$out/eval-sft.log" 2>&1 || { echo "trl_compare.sh: gtpo eval of $sft failed (see $out/eval-sft.log)" >&2; exit 1; }
fi

results="$out/results.jsonl"
: > "$results"
rss_mb() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$1"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

run_gtpo() {  # pair
  local dir="$out/pair-$1/gtpo" l; l="$(load)"
  /usr/bin/time -v -o "$out/pair-$1/gtpo.time" "$gtpo" train "$config" "${common[@]}" "train.out_dir=$dir" \
      log.progress=false --overwrite > "$out/pair-$1/gtpo.log" 2>&1 ||
    { echo "trl_compare.sh: gtpo train failed (see $out/pair-$1/gtpo.log)" >&2; return 1; }
  python3 - "$dir" "$skip" "$1" "$l" "$(rss_mb "$out/pair-$1/gtpo.time")" "$group" >> "$results" <<'EOF'
import json, statistics, sys
d, skip, pair, load, rss, group = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
m = [json.loads(l) for l in open(f"{d}/metrics.jsonl")][skip:]
ev = [json.loads(l) for l in open(f"{d}/eval.jsonl")]
med = lambda k: statistics.median(x[k] for x in m)
# Kept groups = sampled groups without dynamic sampling; G responses each.
tokens = [x["response_length_mean"] * x["groups_kept"] * group for x in m]
print(json.dumps({"impl": "gtpo", "pair": pair, "load_before": load, "timed_steps": len(m),
                  "step_s": med("seconds_step"), "rollout_s": statistics.median(x["seconds_rollout"] + x["seconds_advantages"] for x in m),
                  "update_s": med("seconds_update"),
                  "tokens_per_step": statistics.mean(tokens), "peak_rss_mb": rss,
                  "greedy_accuracy": ev[-1]["greedy_accuracy"], "greedy_accuracy_before": ev[0]["greedy_accuracy"],
                  "per_step": {"step_s": [x["seconds_step"] for x in m],
                               "rollout_s": [x["seconds_rollout"] + x["seconds_advantages"] for x in m],
                               "update_s": [x["seconds_update"] for x in m], "tokens": tokens}}))
EOF
}

run_trl() {  # pair
  local l; l="$(load)"
  /usr/bin/time -v -o "$out/pair-$1/trl.time" "$python" "$root/scripts/bench/trl_bench.py" --checkpoint "$sft" \
      --prompts "$prompts" --test "$test" --steps "$steps" --prompts-per-step "$pps" --group-size "$group" \
      --temperature "$temp" --max-new-tokens "$max_new" --lr "$lr" --threads "$threads" --skip-steps "$skip" \
      --save "$out/pair-$1/trl-model" --out-dir "$out/pair-$1/trl-out" --label "pair $1" \
      > "$out/pair-$1/trl.json" 2> "$out/pair-$1/trl.log" ||
    { echo "trl_compare.sh: trl_bench.py failed (see $out/pair-$1/trl.log)" >&2; return 1; }
  local acc
  acc="$("$gtpo" eval --checkpoint "$out/pair-$1/trl-model" --task arith "difficulty=$difficulty" "ops=$ops" \
         -k 1 --problems "$problems" --max-new-tokens "$max_new" --threads "$threads" 2>/dev/null |
         sed -n 's/.*greedy accuracy \([0-9.]*\).*/\1/p')"
  [ -n "$acc" ] || { echo "trl_compare.sh: gtpo eval of TRL's model $out/pair-$1/trl-model failed" >&2; return 1; }
  python3 - "$out/pair-$1/trl.json" "$1" "$l" "$(rss_mb "$out/pair-$1/trl.time")" "$acc" "$skip" >> "$results" <<'EOF'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
skip = int(sys.argv[6])
r["per_step"] = {k: v[skip:] for k, v in r["per_step"].items()}
r.update(pair=int(sys.argv[2]), load_before=sys.argv[3], peak_rss_mb_time=float(sys.argv[4]),
         greedy_accuracy_own=r["greedy_accuracy"], greedy_accuracy=float(sys.argv[5]))
print(json.dumps(r))
EOF
}

echo "trl_compare.sh: $workload, $pairs pairs x $steps steps (medians over steps $((skip + 1))..$steps), $threads threads, $(nproc) cores; load $(load)" >&2
for i in $(seq 1 "$pairs"); do
  mkdir -p "$out/pair-$i"
  if [ $((i % 2)) = 1 ]; then order="gtpo trl"; else order="trl gtpo"; fi
  for side in $order; do
    echo "trl_compare.sh: pair $i/$pairs: $side (load $(load))" >&2
    "run_$side" "$i" || exit 1
  done
done
print_table
