#!/usr/bin/env bash
# Compares grpo, dapo, dapo_forking, gtpo and grpo_s with the same budget: one shared SFT warm start
# (so every algorithm starts from the same model), then each algorithm over several seeds. Writes
# runs/compare/table.md (mean ± std of final greedy accuracy and pass@k), runs/compare/report.html (every
# run's curves overlaid, their completions token by token: gtpo report) and runs/compare/metrics.csv.
#
# usage: scripts/compare.sh [--config FILE] [--steps N] [--seeds "0 1 2"] [--algos "grpo gtpo ..."] [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="$root/configs/quickstart.yaml" steps=300 seeds="0 1 2" out="$root/runs/compare"
algos="grpo dapo dapo_forking gtpo grpo_s"
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --algos) algos="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,7p "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"
gtpo="${GTPO_BUILD_DIR:-$root/build}/gtpo"
mkdir -p "$out"
if [ ! -f "$out/sft/model.safetensors" ]; then
  echo "== shared SFT warm start"
  "$gtpo" sft "$config" train.seed=0 train.out_dir="$out" --out "$out/sft"
fi
for algo in $algos; do
  for seed in $seeds; do
    run="$out/$algo-s$seed"
    if [ -f "$run/checkpoints/latest" ] && grep -q "\"step\":$steps," "$run/metrics.jsonl" 2>/dev/null; then
      echo "== $algo seed $seed: done already"; continue
    fi
    rm -rf "$run"
    echo "== $algo seed $seed ($steps steps)"
    "$gtpo" train "$config" rl.algo="$algo" train.init_from="$out/sft" sft.steps=0 train.seed="$seed" \
      train.steps="$steps" train.out_dir="$run" train.checkpoint_every=0 eval.every=0 log.progress=false
  done
done
python3 "$root/scripts/compare_report.py" "$out" --algos $algos --seeds $seeds
runs=()
for algo in $algos; do for seed in $seeds; do
  [ -f "$out/$algo-s$seed/metrics.jsonl" ] && runs+=("$out/$algo-s$seed")
done; done
"$gtpo" report "${runs[@]}" --out "$out/report.html" --csv "$out/metrics.csv"
