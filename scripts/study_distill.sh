#!/usr/bin/env bash
# The distillation example (docs/results.md, "On-policy distillation"): a larger teacher and a weak student,
# both trained by gtpo on the CPU from configs/quickstart.yaml, then the same RL budget from the same student
# start with the outcome reward alone and with the teacher's token rewards added, over several seeds.
# Ends with OUT/table.md: greedy test accuracy (200 problems) at every eval step, mean ± sd over the seeds.
#
# usage: scripts/study_distill.sh [OUT] (default runs/distill); GTPO_BUILD_DIR (default build/), STEPS (100),
# SEEDS ("1 2 3"), LR (the RL learning rate; default the config's 2e-4). Runs that exist are kept, so a stopped study continues. Two runs at a time, 1 thread each.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/runs/distill}" gtpo="${GTPO_BUILD_DIR:-$root/build}/gtpo" config="$root/configs/quickstart.yaml"
steps="${STEPS:-100}" seeds="${SEEDS:-1 2 3}" lr="${LR:-2.0e-4}"
mkdir -p "$out"
# The teacher: 4 layers of width 128 (1.5M parameters, the student's 15×), a long supervised warm start.
[ -d "$out/teacher" ] || "$gtpo" sft "$config" model.hidden_size=128 model.num_hidden_layers=4 sft.steps=800 \
  train.threads=1 --out "$out/teacher" 2> "$out/teacher.log"
# The student's start: the quick start's model after a short warm start (a few percent accurate).
[ -d "$out/student" ] || "$gtpo" sft "$config" sft.steps=150 train.threads=1 --out "$out/student" 2> "$out/student.log"
common=(train.init_from="$out/student" sft.steps=0 train.steps="$steps" optim.lr="$lr" train.threads=1 eval.every=25
        train.checkpoint_every="$steps" log.progress=false)
declare -A arm=([outcome]="" [distill]="teacher.path=$out/teacher reward.token_gamma=0")
run() {  # ARM SEED
  local dir="$out/$1-seed$2"
  [ -f "$dir/eval.jsonl" ] && [ "$(wc -l < "$dir/eval.jsonl")" -gt 1 ] && return 0
  rm -rf "$dir"
  # shellcheck disable=SC2086
  "$gtpo" train "$config" "${common[@]}" train.seed="$2" ${arm[$1]} train.out_dir="$dir" > "$dir.log" 2>&1
}
for seed in $seeds; do
  run outcome "$seed" & run distill "$seed" & wait
done
python3 - "$out" "$seeds" <<'EOF'
import json, statistics, sys, pathlib
out, seeds = pathlib.Path(sys.argv[1]), sys.argv[2].split()
def curve(d):
    return {j["step"]: j["greedy_accuracy"] for j in map(json.loads, open(d / "eval.jsonl"))}
rows = {a: [curve(out / f"{a}-seed{s}") for s in seeds] for a in ("outcome", "distill")}
steps = sorted(set.intersection(*(set(c) for cs in rows.values() for c in cs)))
lines = ["| step | " + " | ".join(f"{a} (mean ± sd, {len(seeds)} seeds)" for a in rows) + " |",
         "|---|" + "---|" * len(rows)]
for st in steps:
    cells = []
    for a, cs in rows.items():
        v = [c[st] for c in cs]
        cells.append(f"{statistics.mean(v):.3f} ± {statistics.stdev(v) if len(v) > 1 else 0:.3f}")
    lines.append(f"| {st} | " + " | ".join(cells) + " |")
(out / "table.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
grep -h "test accuracy" "$out/teacher.log" "$out/student.log" | sed 's/^/  /'
