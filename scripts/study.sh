#!/usr/bin/env bash
# The long-reasoning study (issue 17, docs/results.md "Long reasoning"): every method of the paper's comparison
# from one shared SFT checkpoint with one budget, over several seeds, on a task whose responses are 64-215
# tokens long (configs/study-progression.yaml). Runs already finished are skipped, so the study can be stopped and
# continued later; seeds are the outer loop, so a partial study has every method on the same seeds.
# Ends with OUT/table.md (mean ± 95% CI, paired differences with dapo), OUT/curves.svg, OUT/report.html,
# OUT/metrics.csv (gtpo report) and OUT/study.csv (scripts/study_csv.py: the finished runs' curves and final
# evaluations, small enough for docs/; --import of that file lets a later sitting continue the study).
#
# usage: scripts/study.sh [--config FILE] [--steps N] [--lr LR] [--seeds "0 1 2 3 4"] [--methods "grpo gtpo ..."]
#                         [--out DIR] [--import CSV] [--no-build] [--report-only] [--list] [--dose SPEC ...]
#   --steps, --lr   the budget: RL steps and AdamW learning rate of every run (default: the config's); OUT
#                   records it (OUT/budget.txt) and refuses another budget, so one table never mixes two
#   --import CSV    take the finished runs of an earlier sitting from its study.csv (runs OUT has are kept)
#   --list          print every method and the overrides that define it, then exit
#   --dose SPEC     a dose-response table, NAME:ARM=VALUE,... (scripts/study_report.py), e.g.
#                   "alpha2:gtpo_a2_0=0,gtpo_a2_0.1=0.1,gtpo_a2_0.3=0.3,gtpo_a2_1=1"
#   --no-build      use the gtpo binary as it is (no setup.sh, no build.sh)
#   --report-only   skip training: summarise the runs that exist
# Two studies may share OUT with different --seeds (one per core, GTPO_THREADS=1) once the first has made the
# SFT checkpoint; each trains only its own seeds.
# Environment: GTPO_BUILD_DIR (default build/), GTPO_THREADS (threads per run, default: the library's).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dose=()
config="$root/configs/study-progression.yaml" steps="" lr="" seeds="0 1 2 3 4" out="$root/runs/study" import="" report_only=0 build=1

# name: the overrides that make the method (rl.algo resets every rl key to the algorithm's defaults first).
declare -A method_overrides=(
  [grpo]="rl.algo=grpo"
  [dr_grpo]="rl.algo=dr_grpo"
  [dapo]="rl.algo=dapo"
  [dapo_forking]="rl.algo=dapo_forking"
  [gtpo]="rl.algo=gtpo gtpo.adv_norm=joint"
  [gtpo_separate]="rl.algo=gtpo gtpo.adv_norm=separate"
  [gtpo_batch]="rl.algo=gtpo gtpo.scope=batch"
  [grpo_s]="rl.algo=grpo_s grpo_s.ratio=arith"
  [grpo_s_geo]="rl.algo=grpo_s grpo_s.ratio=geo"
  [rloo]="rl.algo=rloo"
  [reinforce_pp]="rl.algo=reinforce_pp"
  [gspo]="rl.algo=gspo"
  [cispo]="rl.algo=cispo"
  [clip_cov]="rl.algo=clip_cov"
  [kl_cov]="rl.algo=kl_cov"
  [entropy_adv]="rl.algo=entropy_adv"
  # The dose-response arms (configs/study-countdown.yaml): α2 = 0 and β2 = 0 are the exact controls, the same
  # code without the entropy term; dapo_forking's normaliser and its random-selection control.
  [gtpo_a2_0]="rl.algo=gtpo gtpo.alpha2=0"
  [gtpo_a2_0.1]="rl.algo=gtpo gtpo.alpha2=0.1"
  [gtpo_a2_0.3]="rl.algo=gtpo gtpo.alpha2=0.3"
  [gtpo_a2_1]="rl.algo=gtpo gtpo.alpha2=1.0"
  [grpo_s_b2_0]="rl.algo=grpo_s grpo_s.beta2=0"
  [grpo_s_b2_0.1]="rl.algo=grpo_s grpo_s.beta2=0.1"
  [grpo_s_b2_0.3]="rl.algo=grpo_s grpo_s.beta2=0.3"
  [dapo_forking_kept]="rl.algo=dapo_forking dapo_forking.norm=kept"
  [dapo_forking_random]="rl.algo=dapo_forking dapo_forking.select=random"
)
methods="grpo dr_grpo dapo dapo_forking gtpo gtpo_separate gtpo_batch grpo_s grpo_s_geo"

while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --lr) lr="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --methods) methods="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --import) import="$2"; shift 2 ;;
    --dose) dose+=(--dose "$2"); shift 2 ;;
    --report-only) report_only=1; shift ;;
    --no-build) build=0; shift ;;
    --list) for m in $(printf '%s\n' "${!method_overrides[@]}" | sort); do printf '%-14s %s\n' "$m" "${method_overrides[$m]}"; done
            echo "default --methods: $methods"; exit 0 ;;
    -h|--help) sed -n 2,23p "$0"; exit 0 ;;
    *) echo "study.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for m in $methods; do
  [ -n "${method_overrides[$m]:-}" ] || { echo "study.sh: unknown method '$m'; known: ${!method_overrides[*]}" >&2; exit 2; }
done
[ -f "$config" ] || { echo "study.sh: no config file '$config'" >&2; exit 2; }

if [ "$report_only" = 0 ] && [ "$build" = 1 ]; then
  bash "$root/scripts/setup.sh"
  bash "$root/scripts/build.sh"
fi
gtpo="${GTPO_BUILD_DIR:-$root/build}/gtpo"
[ -x "$gtpo" ] || { echo "study.sh: no gtpo binary at $gtpo (build first, or set GTPO_BUILD_DIR)" >&2; exit 2; }
threads=() eval_threads=()
if [ -n "${GTPO_THREADS:-}" ]; then threads=(train.threads="$GTPO_THREADS"); eval_threads=(--threads "$GTPO_THREADS"); fi
mkdir -p "$out"
cp "$config" "$out/study-config.yaml.$$" && mv "$out/study-config.yaml.$$" "$out/study-config.yaml"  # $$: two studies may share OUT (different --seeds)
[ -n "$steps" ] || steps="$(sed -n 's/^  steps: *\([0-9]*\).*/\1/p' <(sed -n '/^train:/,/^[a-z]/p' "$config") | head -1)"
[ -n "$steps" ] || { echo "study.sh: $config has no train.steps; give --steps" >&2; exit 2; }
[ -n "$lr" ] || lr="$(sed -n 's/^  lr: *\([0-9.eE+-]*\).*/\1/p' <(sed -n '/^optim:/,/^[a-z]/p' "$config") | head -1)"
lr_args=()
[ -n "$lr" ] && lr_args=(optim.lr="$lr")
budget="steps=$steps lr=${lr:-gtpo default}"
if [ -f "$out/budget.txt" ]; then
  [ "$(cat "$out/budget.txt")" = "$budget" ] ||
    { echo "study.sh: $out holds runs of '$(cat "$out/budget.txt")', not '$budget'; use another --out" >&2; exit 2; }
elif [ "$report_only" = 0 ]; then
  echo "$budget" > "$out/budget.txt.$$" && mv "$out/budget.txt.$$" "$out/budget.txt"
fi
[ -z "$import" ] || python3 "$root/scripts/study_csv.py" import "$import" "$out" --steps "$steps"

# A run is finished when its last metrics line is step STEPS and its final evaluation is logged.
finished() { grep -q "\"step\": *$steps *[,}]" "$1/metrics.jsonl" 2>/dev/null && grep -q "\"step\": *$steps *[,}]" "$1/eval.jsonl" 2>/dev/null; }

if [ "$report_only" = 0 ]; then
  if [ ! -f "$out/sft/model.safetensors" ]; then
    echo "== shared SFT checkpoint ($config, seed 0)"
    "$gtpo" sft "$config" train.seed=0 "${threads[@]}" train.out_dir="$out/sft-run" --out "$out/sft"
  fi
  if [ ! -s "$out/sft-eval.txt" ]; then
    # The start of every run, evaluated once with the runs' eval settings (the runs skip it: eval.before_rl=false).
    echo "== evaluating the SFT checkpoint"
    "$gtpo" eval --checkpoint "$out/sft" --seed 0 "${eval_threads[@]}" > "$out/sft-eval.txt.$$"
    mv "$out/sft-eval.txt.$$" "$out/sft-eval.txt"
    cat "$out/sft-eval.txt"
  fi
  total=0 done_before=0
  for seed in $seeds; do for m in $methods; do
    total=$((total + 1)); finished "$out/$m-s$seed" && done_before=$((done_before + 1))
  done; done
  echo "== $total runs of $steps RL steps; $done_before finished already"
  started=$(date +%s) ran=0
  for seed in $seeds; do
    for m in $methods; do
      run="$out/$m-s$seed"
      finished "$run" && continue
      rm -rf "$run"
      left=$((total - done_before - ran))
      eta=""
      [ "$ran" -gt 0 ] && eta=", about $(( ( $(date +%s) - started ) * left / ran / 60 )) min left"
      echo "== $m seed $seed ($left runs to go$eta) -> $run/train.log"
      # shellcheck disable=SC2086  # the overrides are words
      if ! "$gtpo" train "$config" ${method_overrides[$m]} train.init_from="$out/sft" sft.steps=0 train.seed="$seed" \
          train.steps="$steps" "${lr_args[@]}" train.out_dir="$run" train.checkpoint_every=0 eval.before_rl=false log.progress=false \
          "${threads[@]}" > "$out/$m-s$seed.log" 2>&1; then
        echo "study.sh: $m seed $seed failed; its log: $out/$m-s$seed.log" >&2
        tail -5 "$out/$m-s$seed.log" >&2
        exit 1
      fi
      mv "$out/$m-s$seed.log" "$run/train.log"
      grep "^test accuracy" "$run/train.log" | sed 's/^/   /'
      ran=$((ran + 1))
    done
  done
fi

runs=()
for m in $methods; do for seed in $seeds; do
  finished "$out/$m-s$seed" && runs+=("$out/$m-s$seed")
done; done
[ ${#runs[@]} -gt 0 ] || { echo "study.sh: no finished runs in $out" >&2; exit 1; }
"$gtpo" report "${runs[@]}" --out "$out/report.html" --csv "$out/metrics.csv"
python3 "$root/scripts/study_report.py" "$out" --steps "$steps" --methods $methods --seeds $seeds --baseline dapo "${dose[@]}"
python3 "$root/scripts/study_csv.py" export "$out" "$out/study.csv" --steps "$steps"
