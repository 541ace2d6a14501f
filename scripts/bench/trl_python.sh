#!/usr/bin/env bash
# Prints the path of a python3 that runs TRL's GRPOTrainer at the pinned versions below, creating the venv
# .venv-trl (repository root, git-ignored, no system site packages: Debian's torch 1.13 cannot run any
# GRPOTrainer) the first time. Exits 1 with a message when it cannot. Set GTPO_TRL_PYTHON to use another
# interpreter that has exactly these versions.
#   python=$(scripts/bench/trl_python.sh) && "$python" scripts/bench/trl_bench.py --help
#
# Pins (chosen 2026-12-03 against this machine's package index):
#   trl 1.16.0, transformers 5.24.0, torch 2.15.0 (PyPI's default wheel, with its CUDA libraries: the CPU-only
#   index download.pytorch.org/whl/cpu is not reachable from here; ~6 GB on disk), accelerate 1.16.0,
#   datasets 5.2.0.
# transformers 5.25.0 (the newest) does NOT install here: it requires kernels>=0.19.1,<0.20 unconditionally and
# the index has at most kernels 0.17.2. 5.24.0 has no kernels requirement (only in extras) and trl 1.16.0
# accepts transformers>=4.56.2.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pins=(trl==1.16.0 transformers==5.24.0 torch==2.15.0 accelerate==1.16.0 datasets==5.2.0)
check='import sys, importlib.metadata as m
want = {"trl": "1.16.0", "transformers": "5.24.0", "torch": "2.15.0", "accelerate": "1.16.0", "datasets": "5.2.0"}
bad = [f"{k} {m.version(k)} (want {v})" for k, v in want.items() if m.version(k) != v]
import torch, transformers, trl
from trl import GRPOConfig, GRPOTrainer
sys.exit("version mismatch: " + ", ".join(bad) if bad else 0)'
case "${1:-}" in
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  "") ;;
  *) echo "trl_python.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
if [ -n "${GTPO_TRL_PYTHON:-}" ]; then
  if "$GTPO_TRL_PYTHON" -c "$check" >/dev/null 2>&1; then echo "$GTPO_TRL_PYTHON"; exit 0; fi
  echo "GTPO_TRL_PYTHON=$GTPO_TRL_PYTHON cannot import ${pins[*]} (unset it to let this script make .venv-trl)" >&2
  exit 1
fi
venv="$root/.venv-trl"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "$check" >/dev/null 2>&1; then
  echo "$venv/bin/python3"; exit 0
fi
base=""
for c in /usr/bin/python3 python3; do
  if command -v "$c" >/dev/null 2>&1 &&
     "$c" -c 'import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; then
    base="$c"; break
  fi
done
[ -n "$base" ] || { echo "trl_python.sh: needs a python3 >= 3.10 with venv and ensurepip (python3-venv)" >&2; exit 1; }
avail_kb="$(df -Pk "$root" | awk 'NR==2 {print $4}')"
if [ "${avail_kb:-0}" -lt 10000000 ]; then
  echo "trl_python.sh: under 10 GB free on $root; torch ${pins[2]#torch==} with its CUDA wheels needs about 6 GB" >&2
  exit 1
fi
echo "trl_python.sh: creating $venv with ${pins[*]} (several GB, minutes)" >&2
"$base" -m venv "$venv" >&2 || { echo "trl_python.sh: cannot create a venv with $base" >&2; exit 1; }
"$venv/bin/pip" install -q "${pins[@]}" >&2 ||
  { echo "trl_python.sh: pip could not install ${pins[*]} into $venv (see pip's error above)" >&2; exit 1; }
if ! err="$("$venv/bin/python3" -c "$check" 2>&1)"; then
  echo "trl_python.sh: $venv: imports failed after install: $err" >&2; exit 1
fi
echo "$venv/bin/python3"
