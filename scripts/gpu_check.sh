#!/usr/bin/env bash
# The GPU check: one command for a machine with an NVIDIA GPU, from a bare checkout.
#
#   bash scripts/gpu_check.sh                      # builds here (needs scripts/setup.sh's packages)
#   bash scripts/gpu_check.sh --prebuilt PACK.tar.gz   # runs binaries packed elsewhere by scripts/gpu_pack.sh
#
# --prebuilt is for a GPU machine that cannot install the build dependencies (no package registry): the
# pack replaces the setup, configure and build steps with one 'unpack' step (its libraries go on
# LD_LIBRARY_PATH; CUDA's own come from this machine). It must come from a checkout of the same commit.
#
# Steps, each with its own time limit inside an overall deadline (8 minutes on an H200):
#   setup      scripts/setup.sh (build dependencies)
#   gpu        nvidia-smi sees a GPU (no GPU: fails here, with that message)
#   configure  cmake -DGTPO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 into build-gpu/
#   build      everything, tests included
#   cuda-tests ctest -L cuda with GTPO_REQUIRE_CUDA=1: a test that finds no GPU fails instead of skipping
#   parity     the op-level CPU-vs-accelerator tests and the model tests (PyTorch reference, sampler)
#   kv-rows    the GPU sampler test with GTPO_CUDA_KV_ROWS=1 (finished rows leave the decode batch): the same
#              samples as with finished rows padded
#   train      a 20-step GTPO run on the GPU (configs/gpu-check.yaml)
#   train-2ranks  10 steps under mpirun -np 2, one GPU per rank, twice: the final weights bitwise equal (SKIP
#                 where there is one GPU: NCCL needs one GPU per rank)
#   bench-*    gtpo bench train (GPT-2 124M, T 1024: tokens/s and MFU) and rollout (256 sequences) on the
#              GPU in fp32, tf32 and bf16
#   rollout-device-choice  the rollout with the token choice on the GPU (--token-choice device): its
#              tokens_digest must equal the fp32 rollout's (host choice), and its tokens/s
#   profile    gtpo bench --profile: per-primitive device time of the bf16 training step and of the rollout
#              with the host's and the device's token choice (the tables in profile.log)
#   bench-qwen a Qwen2.5-0.5B-shaped random model: bf16 training (tok/s, MFU, allocator peak) and a rollout
#              of 256 sequences x 512 new tokens with the device's token choice
#   resume     10 steps, then --resume to 20: metrics and final weights equal to the 20-step run's, bit for bit
# then prints a summary table. Exit status 0 only when every step passed.
#
# Logs (one per step, ctest's log, bench JSON, the summary) go to $OUT when it is set, else
# build-gpu/gpu-check/. Environment:
#   GTPO_GPU_CHECK_BUILD_DIR   build directory (default build-gpu)
#   GTPO_GPU_CHECK_DEADLINE    overall limit in seconds (default 470)
#   GTPO_GPU_CHECK_NO_PROBE=1  go on without a visible GPU (to exercise this script's failure paths)
#   GTPO_JOBS                  build parallelism (default: every core)
set -uo pipefail

prebuilt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) [ $# -ge 2 ] || { echo "gpu_check: --prebuilt needs a pack (scripts/gpu_pack.sh)" >&2; exit 2; }
                prebuilt="$(realpath "$2")"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (valid: --prebuilt PACK.tar.gz, --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$prebuilt" ] && [ ! -f "$prebuilt" ]; then
  echo "gpu_check: --prebuilt $prebuilt: no such file (make one with scripts/gpu_pack.sh)" >&2; exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GTPO_GPU_CHECK_BUILD_DIR:-$root/build-gpu}"
log_dir="${OUT:-$build_dir/gpu-check}"
deadline_s="${GTPO_GPU_CHECK_DEADLINE:-470}"
jobs="${GTPO_JOBS:-$(nproc)}"
mkdir -p "$log_dir" || { echo "gpu_check: cannot create the log directory $log_dir" >&2; exit 2; }
cd "$root" || exit 2

export OMP_WAIT_POLICY=passive
# Tests run several at a time, each computing its CPU reference: a few OpenMP threads each.
test_jobs=$(( jobs >= 8 ? 8 : (jobs >= 2 ? jobs : 1) ))

start=$SECONDS
names=() statuses=() times=() notes=()
failed=0

# run_step NAME CAP_SECONDS NOTE COMMAND...: runs COMMAND with its output in $log_dir/NAME.log, limited to
# CAP_SECONDS and to what is left of the deadline. Records PASS, FAIL (exit code), TIMEOUT or SKIP.
run_step() {
  local name="$1" cap="$2" note="$3"
  shift 3
  local left=$(( deadline_s - (SECONDS - start) - 5 ))
  local limit=$(( cap < left ? cap : left ))
  local log="$log_dir/$name.log"
  names+=("$name")
  if [ "$limit" -lt 5 ]; then
    statuses+=("SKIP"); times+=("0"); notes+=("no time left within ${deadline_s}s")
    failed=1
    echo "== $name: skipped, the ${deadline_s}s deadline is reached"
    return 1
  fi
  echo "== $name (limit ${limit}s): $*"
  local t0=$SECONDS rc=0
  timeout -k 10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  local took=$(( SECONDS - t0 ))
  times+=("$took")
  if [ "$rc" -eq 0 ]; then
    statuses+=("PASS"); notes+=("$note")
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    statuses+=("TIMEOUT"); notes+=("killed after ${limit}s; see $name.log"); failed=1
  else
    statuses+=("FAIL"); notes+=("exit $rc; see $name.log"); failed=1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "-- $name failed (exit $rc); last lines of $log:"
    tail -n 15 "$log" | sed 's/^/   /'
  fi
  return "$rc"
}

# Marks the last recorded step failed with a reason (for checks made after a command succeeded).
fail_last() {
  local i=$(( ${#statuses[@]} - 1 ))
  statuses[i]="FAIL"; notes[i]="$1"; failed=1
  echo "-- ${names[i]}: $1"
}

set_note() { notes[${#notes[@]} - 1]="$1"; }  # the note of the last recorded step

# ctest_passed LOG: "N of N" for each all-passed ctest summary in LOG. CTest writes "100% tests passed, 0 tests
# failed out of N" (3.x) or "100% tests passed out of N" (4.x, as pip's cmake on the GPU image).
ctest_passed() {
  grep -Eo '100% tests passed(, 0 tests failed)? out of [0-9]+' "$1" 2>/dev/null | sed -E 's/.* ([0-9]+)$/\1 of \1/'
}

json_number() {  # json_number KEY FILE: the first numeric value of "KEY" in a one-line JSON file
  grep -o "\"$1\":[-0-9.eE+]*" "$2" 2>/dev/null | head -n 1 | cut -d: -f2
}

json_string() {  # json_string KEY FILE: the first string value of "KEY" in a one-line JSON file
  grep -o "\"$1\":\"[^\"]*\"" "$2" 2>/dev/null | head -n 1 | cut -d'"' -f4
}

print_summary() {
  local total=$(( SECONDS - start ))
  {
    echo
    echo "gtpo GPU check: $( [ "$failed" -eq 0 ] && echo PASSED || echo FAILED ) in ${total}s (deadline ${deadline_s}s)"
    [ -n "${gpu_name:-}" ] && echo "GPU: $gpu_name"
    printf '%-16s %-8s %6s  %s\n' "step" "status" "secs" "note"
    printf '%-16s %-8s %6s  %s\n' "----" "------" "----" "----"
    local i
    for i in "${!names[@]}"; do
      printf '%-16s %-8s %6s  %s\n' "${names[$i]}" "${statuses[$i]}" "${times[$i]}" "${notes[$i]}"
    done
    if [ -n "${bench_rows:-}" ]; then
      echo
      printf '%-10s %14s %8s %16s\n' "precision" "train tok/s" "MFU" "rollout tok/s"
      printf '%s' "$bench_rows"
      echo "(train: GPT-2 124M, batch 8 x T 1024, MFU = (6N + 12LCT) tok/s / dense peak; rollout: 256 sequences)"
    fi
    echo "logs: $log_dir"
  } | tee "$log_dir/summary.txt"
}

finish() {
  print_summary
  exit "$failed"
}

# ---- setup and the GPU probe -------------------------------------------------------------------
if [ -z "$prebuilt" ]; then
  run_step setup 90 "build dependencies present" bash "$root/scripts/setup.sh" || finish
fi

if [ "${GTPO_GPU_CHECK_NO_PROBE:-0}" = "1" ]; then
  names+=("gpu"); statuses+=("SKIP"); times+=("0"); notes+=("GTPO_GPU_CHECK_NO_PROBE=1: not probed")
  failed=1
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  names+=("gpu"); statuses+=("FAIL"); times+=("0")
  notes+=("no GPU: nvidia-smi is not installed (no NVIDIA driver on this machine)")
  failed=1
  echo "gpu_check: no NVIDIA GPU here (nvidia-smi is missing); this check needs a GPU machine" >&2
  finish
else
  if run_step gpu 20 "" nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; then
    gpu_name="$(head -n 1 "$log_dir/gpu.log")"
    if [ -z "$gpu_name" ]; then
      fail_last "nvidia-smi lists no GPU"
    else
      set_note "$gpu_name"
    fi
  fi
  if [ "${statuses[-1]}" != "PASS" ]; then
    echo "gpu_check: no usable NVIDIA GPU is visible (nvidia-smi failed or listed none; check the driver and" \
         "CUDA_VISIBLE_DEVICES)" >&2
    finish
  fi
fi

# ---- build -------------------------------------------------------------------------------------
if [ -n "$prebuilt" ]; then
  # unpack_pack: the pack's build tree where its CTest files expect it, its libraries on the library path.
  unpack_pack() {
    local stage source rel missing dir
    stage="$(mktemp -d)" && tar -C "$stage" -xzf "$prebuilt" || return 1
    source="$(cat "$stage/source-dir")" rel="$(cat "$stage/build-dir")"
    echo "pack built from commit $(cat "$stage/commit") in $source; this checkout: $root at" \
      "$(git -C "$root" rev-parse HEAD 2>/dev/null || echo '?')"
    build_dir="$root/$rel"
    rm -rf "$build_dir" && mkdir -p "$build_dir" && cp -a "$stage/$rel/." "$build_dir/" || return 1
    rm -rf "$build_dir/pack-lib" && cp -a "$stage/lib" "$build_dir/pack-lib" || return 1
    if [ "$(realpath -m "$source")" != "$root" ]; then
      # The binaries and CTest's files name the packing checkout's path: make it lead here.
      if [ -e "$source" ]; then
        echo "gpu_check: the pack expects the checkout at $source, which exists and is not this one" >&2
        return 1
      fi
      mkdir -p "$(dirname "$source")" && ln -s "$root" "$source" || return 1
      echo "linked $source -> $root"
    fi
    export LD_LIBRARY_PATH="$build_dir/pack-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # CUDA's libraries from this machine: the toolkit's, else a Python wheel's (nvidia-cublas).
    missing="$(ldd "$build_dir/gtpo" | awk '/not found/{print $1}')"
    if [ -n "$missing" ]; then
      for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
                 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null); do
        [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
      done
      missing="$(ldd "$build_dir/gtpo" | awk '/not found/{print $1}')"
    fi
    "$build_dir/gtpo" --help >/dev/null 2>&1 ||
      { echo "gtpo does not start with this machine's libstdc++: using the pack's"; \
        LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$build_dir/pack-lib/fallback"; }
    ldd "$build_dir/gtpo"
    [ -z "$missing" ] || { echo "gpu_check: libraries not found on this machine: $missing" >&2; return 1; }
    "$build_dir/gtpo" --help >/dev/null || { echo "gpu_check: the packed gtpo does not start" >&2; return 1; }
  }
  # Not through run_step: it runs in this shell, so that build_dir and LD_LIBRARY_PATH reach the later steps.
  echo "== unpack: $prebuilt"
  names+=("unpack"); t0=$SECONDS
  if unpack_pack >"$log_dir/unpack.log" 2>&1; then
    statuses+=("PASS"); notes+=("prebuilt: $(basename "$prebuilt")"); times+=("$(( SECONDS - t0 ))")
  else
    statuses+=("FAIL"); notes+=("see unpack.log"); times+=("$(( SECONDS - t0 ))"); failed=1
    tail -n 15 "$log_dir/unpack.log" | sed 's/^/   /'
    finish
  fi
else
  run_step configure 90 "GTPO_CUDA=ON, sm_90" cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DGTPO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 || finish
  run_step build 300 "$jobs jobs" cmake --build "$build_dir" -j "$jobs" || finish
fi
gtpo="$build_dir/gtpo"

# ---- tests -------------------------------------------------------------------------------------
# GTPO_REQUIRE_CUDA=1: the skip helper of tests/cuda and the op harness fail where they would skip.
run_step cuda-tests 150 "" env GTPO_REQUIRE_CUDA=1 OMP_NUM_THREADS=2 \
  ctest --test-dir "$build_dir" -L '^cuda$' -j "$test_jobs" --output-on-failure --timeout 120
cp "$build_dir/Testing/Temporary/LastTest.log" "$log_dir/ctest-cuda.log" 2>/dev/null
if [ "${statuses[-1]}" = "PASS" ]; then
  count="$(ctest_passed "$log_dir/cuda-tests.log" | head -n 1)"
  if grep -q "no CUDA device: skipped" "$log_dir/ctest-cuda.log" 2>/dev/null; then
    fail_last "a cuda test skipped for want of a GPU"
  elif [ -z "$count" ]; then
    fail_last "no cuda tests ran (is test_cuda built?)"
  else
    set_note "$count"
  fi
fi

# The runtime's op tests that compare the CPU with every accelerator, then the model suite (PyTorch
# reference fixtures, KV cache, sampler).
run_step parity 120 "" env GTPO_REQUIRE_CUDA=1 OMP_NUM_THREADS=2 bash -c "
  ctest --test-dir '$build_dir' -R 'every backend agrees|accelerator backends agree' -j $test_jobs \
    --output-on-failure --timeout 100 &&
  ctest --test-dir '$build_dir' -L '^model\$' -j $test_jobs --output-on-failure --timeout 100"
if [ "${statuses[-1]}" = "PASS" ]; then
  set_note "$(ctest_passed "$log_dir/parity.log" | paste -sd+ | sed 's/^/ops+model: /; s/$/ passed/')"
fi

# ---- finished rows leaving the decode batch on the GPU (GTPO_CUDA_KV_ROWS=1: the decode attention reads
# cache rows by index): the sampler test, whose samples must equal those with finished rows padded --------
run_step kv-rows 60 "" env GTPO_REQUIRE_CUDA=1 GTPO_CUDA_KV_ROWS=1 OMP_NUM_THREADS=2 \
  ctest --test-dir "$build_dir" -R 'sampler: the same seed gives the same samples' --output-on-failure --timeout 50

# ---- a short GTPO run on the GPU ---------------------------------------------------------------
# The run directory (checkpoints: megabytes) stays in the build tree; its logs are copied next to ours.
run_dir="$build_dir/gpu-check-run"
rm -rf "$run_dir"
run_step train 120 "" "$gtpo" train "$root/configs/gpu-check.yaml" "train.out_dir=$run_dir"
for f in metrics.jsonl eval.jsonl sft.jsonl samples.jsonl; do
  cp "$run_dir/$f" "$log_dir/train-$f" 2>/dev/null
done
if [ "${statuses[-1]}" = "PASS" ]; then
  steps="$(wc -l <"$run_dir/metrics.jsonl" 2>/dev/null || echo 0)"
  if [ "$steps" -ne 20 ]; then
    fail_last "metrics.jsonl has $steps steps, expected 20"
  else
    gap="$(json_number sampler_gap_max <(tail -n 1 "$run_dir/metrics.jsonl"))"
    set_note "$(grep -o 'before RL .*points)' "$log_dir/train.log" | head -n 1); sampler gap ${gap:-?}"
  fi
fi

# ---- 2 data-parallel ranks, one GPU each (docs/distributed.md) ----------------------------------
# Runs where the machine has at least 2 GPUs (and mpirun); else recorded as SKIP with the reason, which
# does not fail the check. Gradients are summed by NCCL where the build found it (else through the host).
gpu_count="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c . || true)"
dp_dir="$build_dir/gpu-check-dp"
rm -rf "$dp_dir"
if [ "${gpu_count:-0}" -lt 2 ] || ! command -v mpirun >/dev/null 2>&1; then
  names+=("train-2ranks"); statuses+=("SKIP"); times+=("0")
  notes+=("needs 2 GPUs and mpirun; this machine has ${gpu_count:-0} GPU(s)")
  echo "== train-2ranks: skipped, ${gpu_count:-0} GPU(s) here (a 2-rank run needs 2)"
else
  run_step train-2ranks 120 "" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np 2 --bind-to none bash -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"' \
    "$gtpo" train "$root/configs/gpu-check.yaml" "train.out_dir=$dp_dir" train.steps=10 eval.every=0
  if [ "${statuses[-1]}" = "PASS" ]; then
    steps="$(wc -l <"$dp_dir/metrics.jsonl" 2>/dev/null || echo 0)"
    [ "$steps" -eq 10 ] && set_note "10 steps on 2 GPUs" || fail_last "metrics.jsonl has $steps steps, expected 10"
  fi
  # The same 2-rank run again: the ZeRO-1 step's exchanges (NCCL) and rank-order sums must repeat bit for bit.
  run_step train-2ranks-repeat 120 "" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np 2 --bind-to none bash -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"' \
    "$gtpo" train "$root/configs/gpu-check.yaml" "train.out_dir=$dp_dir-repeat" train.steps=10 eval.every=0
  if [ "${statuses[-1]}" = "PASS" ]; then
    if cmp -s "$dp_dir/checkpoints/step-000010/model.safetensors" "$dp_dir-repeat/checkpoints/step-000010/model.safetensors"; then
      set_note "weights bitwise equal to the first 2-rank run; $(tail -1 "$dp_dir/metrics.jsonl" | python3 -c 'import json,sys; m=json.load(sys.stdin); print("%.1f MB sent per optimiser step" % (m.get("dist_bytes_sent", 0) / 1e6))' 2>/dev/null)"
    else
      fail_last "the final weights differ from the first 2-rank run's"
    fi
  fi
fi

# ---- benchmarks --------------------------------------------------------------------------------
bench_rows=""
for precision in fp32 tf32 bf16; do
  train_json="$log_dir/bench-train-$precision.json"
  rollout_json="$log_dir/bench-rollout-$precision.json"
  run_step "bench-$precision" 70 "" bash -c "set -o pipefail
    '$gtpo' bench --workload train --device cuda --precision $precision --runs 3 --warmup 1 --json > '$train_json' &&
    '$gtpo' bench --workload rollout --device cuda --precision $precision --runs 3 --warmup 1 --json > '$rollout_json'"
  tps="$(json_number tokens_per_s "$train_json")"
  mfu="$(json_number mfu "$train_json")"
  rps="$(json_number tokens_per_s "$rollout_json")"
  [ -n "$tps" ] && tps="$(awk -v x="$tps" 'BEGIN { printf "%.0f", x }')"
  [ -n "$rps" ] && rps="$(awk -v x="$rps" 'BEGIN { printf "%.0f", x }')"
  [ -n "$mfu" ] && mfu="$(awk -v m="$mfu" 'BEGIN { printf "%.1f%%", 100 * m }')"
  bench_rows+="$(printf '%-10s %14s %8s %16s' "$precision" "${tps:--}" "${mfu:--}" "${rps:--}")"$'\n'
  if [ "${statuses[-1]}" = "PASS" ]; then
    set_note "train ${tps:-?} tok/s, MFU ${mfu:-?}, rollout ${rps:-?} tok/s"
  fi
done

# ---- the token choice on the device: the same tokens as the host's choice (fp32 above), and its speed ----
host_json="$log_dir/bench-rollout-fp32.json"
device_json="$log_dir/bench-rollout-device-choice.json"
run_step rollout-device-choice 60 "" bash -c "set -o pipefail
  '$gtpo' bench --workload rollout --device cuda --token-choice device --runs 3 --warmup 1 --json > '$device_json'"
if [ "${statuses[-1]}" = "PASS" ]; then
  host_digest="$(json_string tokens_digest "$host_json")" device_digest="$(json_string tokens_digest "$device_json")"
  rate="$(json_number tokens_per_s "$device_json")" choose="$(json_number decode_choose_s "$device_json")"
  if [ -n "$device_digest" ] && [ "$host_digest" = "$device_digest" ]; then
    set_note "$(awk -v r="$rate" -v c="$choose" 'BEGIN { printf "%.0f tok/s, choice %.3f s; tokens = host choice", r, c }')"
  else
    fail_last "tokens digest $device_digest differs from the host choice's ${host_digest:-(none)}"
  fi
fi

# ---- where the GPU's time goes: per-primitive device time (CUDA events) of the bf16 training step and of
# the rollout with each token choice; the tables are in profile.log ---------------------------------
run_step profile 90 "" bash -c "set -o pipefail
  '$gtpo' bench --workload train --device cuda --precision bf16 --runs 2 --warmup 1 --profile &&
  '$gtpo' bench --workload rollout --device cuda --runs 1 --warmup 1 --profile &&
  '$gtpo' bench --workload rollout --device cuda --token-choice device --runs 1 --warmup 1 --profile"
if [ "${statuses[-1]}" = "PASS" ]; then
  set_note "top: $(grep -A1 'primitive ' "$log_dir/profile.log" | grep -v 'primitive \|--' | awk '{ printf "%s%s %s ms", sep, $1, $3; sep = "; " }')"
fi

# ---- a Qwen2.5-0.5B-shaped model (random weights): bf16 training (tokens/s, MFU, memory) and the RL-sized
# rollout (256 sequences x 512 new tokens) with the device's token choice --------------------------------
qwen_train_json="$log_dir/bench-qwen-train.json" qwen_rollout_json="$log_dir/bench-qwen-rollout.json"
run_step bench-qwen 150 "" bash -c "set -o pipefail
  '$gtpo' bench --workload train --device cuda --shape qwen2.5-0.5b --precision bf16 --runs 2 --warmup 1 --json > '$qwen_train_json' &&
  '$gtpo' bench --workload rollout --device cuda --shape qwen2.5-0.5b --precision bf16 --token-choice device --runs 1 --warmup 0 --json > '$qwen_rollout_json'"
if [ "${statuses[-1]}" = "PASS" ]; then
  set_note "$(awk -v t="$(json_number tokens_per_s "$qwen_train_json")" -v m="$(json_number mfu "$qwen_train_json")" \
    -v g="$(json_number allocator_peak_mb "$qwen_train_json")" -v r="$(json_number tokens_per_s "$qwen_rollout_json")" \
    'BEGIN { printf "train %.0f tok/s, MFU %.1f%%, %.1f GB; rollout %.0f tok/s", t, 100 * m, g / 1024, r }')"
fi

# ---- resume on the GPU: 10 steps, then --resume to 20, equal to the 20-step run above -----------------
half_dir="$build_dir/gpu-check-half"
rm -rf "$half_dir"
if [ -f "$run_dir/metrics.jsonl" ]; then
  run_step resume 100 "" bash -c "set -e
    '$gtpo' train '$root/configs/gpu-check.yaml' 'train.out_dir=$half_dir' train.steps=10
    '$gtpo' train --resume '$half_dir' train.steps=20
    python3 - '$run_dir' '$half_dir' <<'PY'
import json, sys
def steps(run):  # metrics without the timings, which differ between runs
    return [{k: v for k, v in json.loads(l).items() if not k.startswith('seconds') and 'per_s' not in k}
            for l in open(run + '/metrics.jsonl')]
full, resumed = steps(sys.argv[1]), steps(sys.argv[2])
bad = [i + 1 for i, (a, b) in enumerate(zip(full, resumed)) if a != b]
if len(full) != len(resumed) or bad:
    sys.exit(f'metrics differ: {len(full)} vs {len(resumed)} steps, first differing step {bad[:1]}')
PY
    cmp '$run_dir/checkpoints/step-000020/model.safetensors' '$half_dir/checkpoints/step-000020/model.safetensors'"
  [ "${statuses[-1]}" = "PASS" ] && set_note "10 + resume 10 = 20 steps: same metrics and weights, bit for bit"
else
  names+=("resume"); statuses+=("SKIP"); times+=("0"); notes+=("the train step left no run to compare with")
  failed=1
fi

finish
