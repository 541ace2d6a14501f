#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang with ASan+UBSan) and runs each in turn from its seed
# corpus. A crash, sanitizer report, leak, hang (over 10 s on one input) or an exception other than
# gtpo::Error fails the run; the input that did it is left as crash-*/timeout-*/leak-* in the work dir.
#   scripts/fuzz.sh [--seconds N] [--runs N] [--only NAME] [--build-dir DIR] [--no-build]
# --seconds N   time per harness (default 20); --runs N   stop each after N inputs instead
# --only NAME   one harness (safetensors, jsonl, rollouts, tokenizer, run_config, verify, chat_template,
#               reward_reply)
# New inputs found while fuzzing go to DIR/fuzz-work/NAME (not the committed corpus); to keep one, copy
# it into tests/fuzz/corpus/NAME/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build-asan"
seconds=20
runs=""
only=""
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --only) only="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build_dir="$(mkdir -p "$build_dir" && cd "$build_dir" && pwd)"  # each harness runs from its work dir
harnesses=(safetensors jsonl rollouts tokenizer run_config verify chat_template reward_reply)
if [ -n "$only" ]; then
  case " ${harnesses[*]} " in *" $only "*) harnesses=("$only") ;;
    *) echo "fuzz.sh: no harness '$only' (valid: ${harnesses[*]})" >&2; exit 2 ;; esac
fi

if [ "$build" = 1 ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DCMAKE_CXX_COMPILER=clang++ -DGTPO_CUDA=OFF -DGTPO_SANITIZE=address,undefined -DGTPO_FUZZ=ON \
    "${launcher[@]}" >/dev/null
  cmake --build "$build_dir" -j "${GTPO_JOBS:-$(nproc)}" --target "${harnesses[@]/#/fuzz_}"
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
for name in "${harnesses[@]}"; do
  work="$build_dir/fuzz-work/$name"
  mkdir -p "$work/corpus"
  limit=(-max_total_time="$seconds")
  if [ -n "$runs" ]; then limit=(-runs="$runs"); fi
  # The committed seeds are read-only input; new coverage lands in the work corpus.
  log="$work/fuzz.log"
  if (cd "$work" && "$build_dir/tests/fuzz/fuzz_$name" "${limit[@]}" -timeout=10 -rss_limit_mb=4096 \
        -max_len=8192 -print_final_stats=1 corpus "$root/tests/fuzz/corpus/$name") >"$log" 2>&1; then
    stats=$(grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec' "$log" | tr '\n' ' ')
    echo "fuzz $name: ok  $stats"
  else
    echo "fuzz $name: FAILED (log: $log)"
    grep -E 'ERROR|SUMMARY|fuzz:|runtime error|Test unit written' "$log" | head -20 || true
    failed+=("$name")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
