#!/usr/bin/env bash
# Sets up, builds and runs every test. This is the command CI runs (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"
build_dir="${GTPO_BUILD_DIR:-$root/build}"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
