#!/usr/bin/env bash
# Prints the path of a python3 that can import torch, transformers 4.45.x, tokenizers 0.20.x and jinja2 3.1
# (transformers renders chat templates with it), and tensorboard (its reader checks gtpo's event files), creating
# the venv .venv-hf (repository root, git-ignored; Debian's python3-torch through --system-site-packages)
# the first time. Needs scripts/setup.sh --reference (python3-torch, python3-venv). Exits 1 with a message
# when it cannot. Set GTPO_HF_PYTHON to use another interpreter that has these.
#   python=$(scripts/reference/hf_python.sh) && "$python" scripts/reference/hf_models.py OUT
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
check='import torch, transformers, tokenizers, jinja2, tensorboard, sys
ok = transformers.__version__.startswith("4.45.") and tokenizers.__version__.startswith("0.20.")
sys.exit(0 if ok else 1)'
if [ -n "${GTPO_HF_PYTHON:-}" ]; then
  if "$GTPO_HF_PYTHON" -c "$check" >/dev/null 2>&1; then echo "$GTPO_HF_PYTHON"; exit 0; fi
  echo "GTPO_HF_PYTHON=$GTPO_HF_PYTHON cannot import torch, transformers 4.45.x and tokenizers 0.20.x" >&2
  exit 1
fi
venv="$root/.venv-hf"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "$check" >/dev/null 2>&1; then
  echo "$venv/bin/python3"; exit 0
fi
if ! /usr/bin/python3 -c "import torch" >/dev/null 2>&1; then
  echo "no python3 with torch: run scripts/setup.sh --reference (Debian's python3-torch)" >&2
  exit 1
fi
echo "hf_python: creating $venv (transformers 4.45.2, tokenizers 0.20.3, tensorboard from PyPI)" >&2
/usr/bin/python3 -m venv --system-site-packages "$venv" >&2 ||
  { echo "cannot create a venv: run scripts/setup.sh --reference (python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install -q "transformers==4.45.2" "tokenizers==0.20.3" "safetensors>=0.4,<0.6" "jinja2>=3.1,<3.2" \
  "tensorboard>=2.15,<3" >&2 ||
  { echo "pip could not install transformers 4.45.2 / tokenizers 0.20.3 / tensorboard into $venv" >&2; exit 1; }
"$venv/bin/python3" -c "$check" || { echo "$venv: imports failed after install" >&2; exit 1; }
echo "$venv/bin/python3"
