#!/usr/bin/env bash
# Benchmark of data-parallel training: 1 process vs N MPI ranks on the same global batch (docs/distributed.md).
#   scripts/bench_ranks.sh [RANKS=2] [REPEATS=3]
# Runs RL steps of the quick start model (no SFT, no eval, every group kept, 1 thread per rank) and prints the median step
# time (metrics.jsonl seconds_step, over every step of every repeat) and the median per phase. Needs a
# build with MPI (scripts/setup.sh installs OpenMPI). On a shared machine the figures are noisy: repeat.
set -euo pipefail
if [ "${1:-}" = "--help" ]; then sed -n 2,6p "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
ranks=${1:-2}
repeats=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
gtpo="$here/build/gtpo"
[ -x "$gtpo" ] || { echo "bench_ranks: $gtpo not built" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "bench_ranks: mpirun not found (scripts/setup.sh)" >&2; exit 1; }
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(train.steps=8 sft.steps=0 eval.every=0 eval.num_problems=1 eval.k=1 train.checkpoint_every=0
      train.sample_every=0 train.threads=1 log.progress=false train.prompts_per_step=16
      rl.dynamic_sampling=false  # an untrained model: keep every group, so that every step updates
      rl.micro_batch_tokens=1024)  # several micro-batches per mini-batch, to deal out to the ranks
for r in $(seq 1 "$repeats"); do
  "$gtpo" train "$here/configs/quickstart.yaml" "${args[@]}" train.out_dir="$work/one-$r" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  mpirun -np "$ranks" --oversubscribe --bind-to none "$gtpo" train "$here/configs/quickstart.yaml" "${args[@]}" \
    train.out_dir="$work/n-$r" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
done
python3 - "$work" "$ranks" <<'PY'
import json, statistics, sys, glob
work, ranks = sys.argv[1], sys.argv[2]
def med(prefix, key):
    v = [json.loads(l)[key] for f in glob.glob(f"{work}/{prefix}-*/metrics.jsonl") for l in open(f)]
    return statistics.median(v)
print(f"{'':>10} {'step s':>8} {'rollout s':>10} {'update s':>9}")
for name, prefix in (("1 process", "one"), (f"{ranks} ranks", "n")):
    print(f"{name:>10} {med(prefix,'seconds_step'):8.3f} {med(prefix,'seconds_rollout'):10.3f} {med(prefix,'seconds_update'):9.3f}")
one, n = med("one", "seconds_step"), med("n", "seconds_step")
print(f"speed-up of the median step: {one / n:.2f}x")
PY
