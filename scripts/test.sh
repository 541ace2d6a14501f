#!/usr/bin/env bash
# Sets up, builds and runs every test. This is the command CI runs (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# --reference: the tests that load gtpo's checkpoints and tokenizers in transformers/tokenizers need
# Debian's torch; hf_python.sh adds transformers 4.45, tokenizers 0.20 and jinja2 in .venv-hf (from PyPI).
bash "$root/scripts/setup.sh" --reference
if [ -z "${GTPO_HF_PYTHON:-}" ]; then
  GTPO_HF_PYTHON="$(bash "$root/scripts/reference/hf_python.sh")"
  export GTPO_HF_PYTHON
fi
# The size budget (the production line cap, tests' and scripts' caps, 80-line functions) and the layers'
# includes first: they fail in a second, before the build. --diff prints the change's size per production
# folder against the merge base with main (or the last tag, or HEAD~1).
python3 "$root/scripts/size_budget.py" --diff
python3 "$root/scripts/check_layers.py"
bash "$root/scripts/build.sh"
build_dir="${GTPO_BUILD_DIR:-$root/build}"
cd "$build_dir"
# Spinning OpenMP workers starve the other test processes on a 2-core machine.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
# Then the same suite under ASan+UBSan (clang, build-asan/) and a short run of every fuzz harness.
# GTPO_SKIP_SANITIZE=1 skips this stage (a quick local run); CI always runs it.
if [ "${GTPO_SKIP_SANITIZE:-0}" != 1 ]; then
  bash "$root/scripts/test_sanitize.sh"
fi
