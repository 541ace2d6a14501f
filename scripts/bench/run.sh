#!/usr/bin/env bash
# The one benchmark command of issue 7: builds gtpo, runs each workload with gtpo and with PyTorch (alternating,
# each in a fresh process so peak RSS is per workload), and writes the comparison to stdout and
# runs/bench/table.md (raw results: runs/bench/gtpo.jsonl, runs/bench/pytorch.jsonl).
#
# usage: scripts/bench/run.sh [--threads N] [--quick] [--rounds K] [--naive] [--no-build]
#                             [--torch-blas-dir DIR | --reference-blas]
#   --threads N          both sides (default: nproc)
#   --quick              3 timed runs after 1 warm-up instead of 5 after 2
#   --rounds K           repeat the whole alternation K times; compare.py takes the medians (default 1)
#   --naive              also time a PyTorch rollout that prefills all 128 rows instead of sharing the 16
#                        prompts' caches (no target; the slowest workload, ~1.5 min more)
#   --torch-blas-dir DIR put DIR first on PyTorch's LD_LIBRARY_PATH (a directory holding libblas.so.3).
#   --reference-blas     let PyTorch use the system's libblas.so.3 as it is.
#
# Debian's torch calls libblas.so.3, which is the slow reference BLAS unless an optimised one is installed;
# a PyTorch that slow would flatter every ratio. By default this script therefore unpacks Debian's
# libopenblas0-openmp into runs/bench/openblas (apt-get download + dpkg -x: the system is not changed) and
# puts it first on PyTorch's LD_LIBRARY_PATH. When that fails it stops, unless --reference-blas is given.
#
# gtpo's side is `build/gtpo bench --workload W [--shape S] --threads N --json [--quick]`, printing one JSON
# line with the fields of torch_bench.py ("impl": "gtpo"); sgemm gets no --shape. When `gtpo bench --help`
# fails, the gtpo side is skipped and the table is PyTorch-only.
set -uo pipefail
# Both sides get the same OpenMP environment, the one gtpo picks for itself: idle workers spin briefly,
# then sleep. libgomp's default (spin long) made either side up to 10x slower on a loaded 2-core machine;
# sleeping at once (spin count 0) cost PyTorch's training 30% and gtpo's 8% on a quiet one.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
export GOMP_SPINCOUNT="${GOMP_SPINCOUNT:-20000}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${GTPO_BUILD_DIR:-$root/build}"
out="$root/runs/bench"
threads="$(nproc)" quick="" rounds=1 naive=0 build=1 blas_dir="${GTPO_TORCH_BLAS_DIR:-}" reference_blas=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --quick) quick="--quick"; shift ;;
    --rounds) rounds="$2"; shift 2 ;;
    --naive) naive=1; shift ;;
    --no-build) build=0; shift ;;
    --torch-blas-dir) blas_dir="$2"; shift 2 ;;
    --reference-blas) reference_blas=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bash "$root/scripts/setup.sh" --reference
# Debian's python3-torch lives under /usr/bin/python3, which a pyenv python3 earlier on PATH may shadow.
if [ -x "$root/scripts/reference/torch_python.sh" ] || [ -f "$root/scripts/reference/torch_python.sh" ]; then
  py="$(bash "$root/scripts/reference/torch_python.sh")" || exit 1
else
  py=""
  for c in "${GTPO_PYTHON:-}" /usr/bin/python3 python3; do
    if [ -n "$c" ] && "$c" -c "import torch" >/dev/null 2>&1; then py="$c"; break; fi
  done
  if [ -z "$py" ]; then
    echo "run.sh: no python3 with torch: run scripts/setup.sh --reference (installs python3-torch) or set GTPO_PYTHON" >&2
    exit 1
  fi
fi
if [ -z "$blas_dir" ] && [ "$reference_blas" = 0 ]; then
  blas_dir="$out/openblas/usr/lib/x86_64-linux-gnu/openblas-openmp"
  if [ ! -e "$blas_dir/libblas.so.3" ]; then
    echo "run.sh: unpacking Debian's libopenblas0-openmp into $out/openblas for the PyTorch side" >&2
    mkdir -p "$out/openblas"
    if ! (cd "$out/openblas" && apt-get download libopenblas0-openmp >/dev/null 2>&1 &&
          dpkg -x libopenblas0-openmp_*.deb .); then
      echo "run.sh: could not fetch libopenblas0-openmp; pass --torch-blas-dir DIR or --reference-blas" >&2
      exit 1
    fi
  fi
fi
if [ -n "$blas_dir" ] && [ ! -e "$blas_dir/libblas.so.3" ]; then
  echo "run.sh: --torch-blas-dir $blas_dir has no libblas.so.3" >&2; exit 2
fi

have_gtpo=1
if [ "$build" = 1 ] && ! bash "$root/scripts/build.sh"; then
  echo "run.sh: build failed: skipping the gtpo side" >&2; have_gtpo=0
fi
if [ "$have_gtpo" = 1 ] && ! "$build_dir/gtpo" bench --help >/dev/null 2>&1; then
  echo "run.sh: '$build_dir/gtpo bench --help' failed (not built yet?): skipping the gtpo side" >&2; have_gtpo=0
fi

mkdir -p "$out"
: > "$out/gtpo.jsonl"
: > "$out/pytorch.jsonl"
jobs=("train small" "train gpt2-124m" "rollout small" "sgemm -")
[ "$naive" = 1 ] && jobs+=("rollout-naive small")

for ((round = 1; round <= rounds; round++)); do
  for job in "${jobs[@]}"; do
    read -r workload shape <<< "$job"
    shape_args=(--shape "$shape"); [ "$shape" = "-" ] && shape_args=()
    echo "== round $round/$rounds: $workload ${shape_args[*]:1}, $threads threads" >&2
    # Alternate the two sides workload by workload so slow drifts of the machine hit both alike.
    if [ "$have_gtpo" = 1 ] && [ "$workload" != "rollout-naive" ]; then
      "$build_dir/gtpo" bench --workload "$workload" "${shape_args[@]}" --threads "$threads" --json $quick \
        >> "$out/gtpo.jsonl" || echo "run.sh: gtpo bench $workload failed" >&2
    fi
    LD_LIBRARY_PATH="${blas_dir:+$blas_dir:}${LD_LIBRARY_PATH:-}" "$py" "$root/scripts/bench/torch_bench.py" \
      --workload "$workload" "${shape_args[@]}" --threads "$threads" $quick \
      >> "$out/pytorch.jsonl" || echo "run.sh: torch_bench.py $workload failed" >&2
  done
done

"$py" "$root/scripts/bench/compare.py" "$out/gtpo.jsonl" "$out/pytorch.jsonl" | tee "$out/table.md"
