#!/usr/bin/env bash
# Configures and builds gtpo (Release) into build/. Extra arguments go to cmake's configure step.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GTPO_BUILD_DIR:-$root/build}"
jobs="${GTPO_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
