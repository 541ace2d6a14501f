#!/usr/bin/env bash
# The README's first command: sets up, builds, and runs the default demo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh"
gtpo="${GTPO_BUILD_DIR:-$root/build}/gtpo"
out="$root/runs/demo"
mkdir -p "$out"
echo "== gtpo init: a tiny Llama-family model"
"$gtpo" init "$root/configs/tiny-llama.yaml" --out "$out/tiny-llama"
echo "== gtpo sample: 4 samples of one prompt with per-token entropies (an untrained model babbles)"
"$gtpo" sample --checkpoint "$out/tiny-llama" --prompt "2+2=" -n 4 --max-new-tokens 16 --seed 3
