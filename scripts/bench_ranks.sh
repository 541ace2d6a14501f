#!/usr/bin/env bash
# Benchmark of data-parallel training: 1 process vs N MPI ranks on the same global batch (docs/distributed.md).
#   scripts/bench_ranks.sh [--config FILE] [--steps N] [--repeats N] [RANKS ...]   (defaults: the quick
#   start config, 8 steps, 3 repeats, ranks 2)
# Runs RL steps (no SFT, no eval, every group kept, 1 thread per rank) and prints, per rank count, the median
# step time and phases (metrics.jsonl, over every step of every repeat), rank 0's time in the optimiser
# exchanges, bytes sent and received per optimiser step, and the AdamW moments it keeps. Needs a build with MPI
# (scripts/setup.sh installs OpenMPI). On a shared machine the figures are noisy: repeat.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
config="$here/configs/quickstart.yaml" steps=8 repeats=3 ranks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --help) sed -n 2,8p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --config) config=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) ranks+=("$1"); shift ;;
  esac
done
[ ${#ranks[@]} -gt 0 ] || ranks=(2)
gtpo="$here/build/gtpo"
[ -x "$gtpo" ] || { echo "bench_ranks: $gtpo not built" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "bench_ranks: mpirun not found (scripts/setup.sh)" >&2; exit 1; }
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(train.steps="$steps" sft.steps=0 eval.every=0 eval.num_problems=1 eval.k=1 train.checkpoint_every=0
      train.sample_every=0 train.threads=1 log.progress=false
      rl.dynamic_sampling=false  # an untrained model: keep every group, so that every step updates
      rl.micro_batch_tokens=1024)  # several micro-batches per mini-batch, to deal out to the ranks
for r in $(seq 1 "$repeats"); do  # interleaved, so that a change of load hits every rank count alike
  "$gtpo" train "$config" "${args[@]}" train.out_dir="$work/1-$r" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  for n in "${ranks[@]}"; do
    mpirun -np "$n" --oversubscribe --bind-to none "$gtpo" train "$config" "${args[@]}" \
      train.out_dir="$work/$n-$r" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  done
done
python3 - "$work" 1 "${ranks[@]}" <<'PY'
import glob, json, statistics, sys
work, counts = sys.argv[1], sys.argv[2:]
def med(n, key):
    v = [json.loads(l).get(key) for f in glob.glob(f"{work}/{n}-*/metrics.jsonl") for l in open(f)]
    return statistics.median(v) if None not in v else None
def cell(v, width, scale=1.0):  # one process has no exchange: "-"
    return f"{'-':>{width}}" if v is None else f"{v / scale:{width}.3f}"
print(f"{'ranks':>5} {'step s':>8} {'rollout s':>10} {'update s':>9} {'exchange s':>11} {'MB sent/opt':>12} "
      f"{'MB recv/opt':>12} {'moments MB':>11} {'speed-up':>9}")
one = med(1, "seconds_step")
for n in counts:
    print(f"{n:>5} {med(n,'seconds_step'):8.3f} {med(n,'seconds_rollout'):10.3f} {med(n,'seconds_update'):9.3f} "
          f"{cell(med(n,'seconds_dist_exchange'), 11)} {cell(med(n,'dist_bytes_sent'), 12, 1e6)} "
          f"{cell(med(n,'dist_bytes_received'), 12, 1e6)} {cell(med(n,'dist_optimizer_state_bytes'), 11, 1e6)} "
          f"{one / med(n,'seconds_step'):8.2f}x")
PY
