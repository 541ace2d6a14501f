#!/usr/bin/env bash
# The README's first command: sets up, builds, and runs the default demo — the quick start:
# SFT then GTPO on 2-digit addition, printing the greedy test accuracy before and after RL.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
# The command line alone: the test suites (most of a full build) are scripts/test.sh's.
GTPO_BUILD_TARGETS=gtpo bash "$root/scripts/build.sh"
cd "$root"
# --overwrite: the demo starts over each time (a run directory otherwise belongs to one run).
"${GTPO_BUILD_DIR:-$root/build}/gtpo" train configs/quickstart.yaml --overwrite "$@"
