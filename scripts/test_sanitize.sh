#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang, -O1 -g, CPU only, any
# report fails the test), then every libFuzzer harness for a short bounded time. scripts/test.sh runs this
# after the normal suite; docs/reliability-fuzzing.md has the figures.
#   scripts/test_sanitize.sh                  build build-asan/, run ctest there, fuzz each harness 10 s
#   scripts/test_sanitize.sh --no-fuzz        only the test suite
#   scripts/test_sanitize.sh -- ARGS...       ARGS go to ctest (e.g. -- -R 'data: ')
# GTPO_ASAN_BUILD_DIR overrides the build directory, GTPO_FUZZ_SECONDS the time per harness.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GTPO_ASAN_BUILD_DIR:-$root/build-asan}"
fuzz_seconds="${GTPO_FUZZ_SECONDS:-10}"
run_fuzz=1
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-fuzz) run_fuzz=0 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "test_sanitize.sh: unknown option '$1' (valid: --no-fuzz, -- CTEST_ARGS...)" >&2; exit 2 ;;
  esac
  shift
done

start=$(date +%s)
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# Debug keeps assert() on; -O1 keeps the instrumented tests fast enough for CI.
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DCMAKE_CXX_COMPILER=clang++ -DGTPO_CUDA=OFF -DGTPO_SANITIZE=address,undefined -DGTPO_FUZZ=ON \
  "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "${GTPO_JOBS:-$(nproc)}"
built=$(date +%s)
echo "sanitize: build took $((built - start)) s"

# A report anywhere ends the process with an error (halt_on_error, and -fno-sanitize-recover at compile
# time); the stack trace names the line.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 1200 "${ctest_args[@]}")
tested=$(date +%s)
echo "sanitize: ctest took $((tested - built)) s"

if [ "$run_fuzz" = 1 ]; then
  bash "$root/scripts/fuzz.sh" --seconds "$fuzz_seconds" --build-dir "$build_dir" --no-build
  echo "sanitize: fuzzing took $(($(date +%s) - tested)) s"
fi
echo "sanitize: all done in $(($(date +%s) - start)) s"
