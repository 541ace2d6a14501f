#!/usr/bin/env bash
# Configures and builds gtpo (Release) into build/. Extra arguments go to cmake's configure step;
# GTPO_BUILD_TARGETS (e.g. "gtpo") builds only those targets (the demo skips the test suites).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GTPO_BUILD_DIR:-$root/build}"
jobs="${GTPO_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086  # a list of target names
cmake --build "$build_dir" -j "$jobs" ${GTPO_BUILD_TARGETS:+--target $GTPO_BUILD_TARGETS}
