#!/usr/bin/env bash
# The cost of an external reward: `gtpo bench --workload rlstep` on the quick-start step (16 prompts x 8
# responses, so 128 reward requests a step), without a reward list (the verifier alone) and with a trivial
# external Python reward added (weight 0, so the training math is the same), alternating, each a fresh
# process. Prints the median step time of each and the overhead as a fraction of the step time.
#
# usage: scripts/bench/reward_overhead.sh [--rounds K] [--runs R] [--threads N]
#   --rounds K   alternations (default 5); --runs R   timed steps per process (default 5, after 2 warm-up)
set -euo pipefail
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-20000}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds=5 runs=5 threads=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --threads) threads=(--threads "$2"); shift 2 ;;
    *) echo "reward_overhead.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
gtpo="$root/build/gtpo"
[ -x "$gtpo" ] || { echo "reward_overhead.sh: build gtpo first (scripts/build.sh)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/trivial.py" <<'PY'
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"id": r["id"], "reward": 1.0 if "####" in r["completion"] else 0.0}), flush=True)
PY
cp "$root/configs/quickstart.yaml" "$work/plain.yaml"
{ cat "$root/configs/quickstart.yaml"
  printf 'reward:\n  functions:\n    - {name: correct, weight: 1}\n'
  printf '    - {name: trivial, weight: 0, command: "python3 %s/trivial.py"}\n' "$work"; } > "$work/reward.yaml"
for ((i = 1; i <= rounds; i++)); do
  for variant in plain reward; do
    (cd "$root" && "$gtpo" bench --workload rlstep --config "$work/$variant.yaml" --runs "$runs" --warmup 2 \
       "${threads[@]}" --json 2>/dev/null) |
      python3 -c 'import json,sys; r = json.load(sys.stdin); print(r["step_s"], r["reward_s"])' >> "$work/$variant.txt"
  done
  echo "round $i/$rounds: step plain $(tail -1 "$work/plain.txt" | cut -d' ' -f1) s," \
       "with reward $(tail -1 "$work/reward.txt" | cut -d' ' -f1) s" >&2
done
python3 - "$work/plain.txt" "$work/reward.txt" <<'PY'
import statistics, sys
plain = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
reward = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
med = lambda rows, i: statistics.median(r[i] for r in rows)
p, r = med(plain, 0), med(reward, 0)
pr, rr = med(plain, 1), med(reward, 1)
ms = lambda rows: ", ".join(f"{x[0]*1000:.0f}" for x in rows)
print(f"quick-start rl step (16 prompts x 8), medians over {len(plain)} interleaved processes:")
print(f"  verifier only:                    step {p*1000:.1f} ms (runs {ms(plain)}), reward functions {pr*1000:.2f} ms")
print(f"  + trivial external Python reward: step {r*1000:.1f} ms (runs {ms(reward)}), reward functions {rr*1000:.2f} ms")
print(f"  step-time difference: {(r - p)*1000:+.1f} ms = {100*(r - p)/p:+.1f}% (noisy on a shared machine)")
print(f"  measured inside the step: the external reward costs {(rr - pr)*1000:.2f} ms = {100*(rr - pr)/r:.2f}% of the step")
PY
