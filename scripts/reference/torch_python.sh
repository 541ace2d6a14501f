#!/usr/bin/env bash
# Prints the path of a python3 that can import torch (Debian's python3-torch lives under /usr/bin/python3,
# which a version-managed python3 earlier on PATH may shadow). Exits 1 with a message when none can.
for candidate in "${GTPO_PYTHON:-}" /usr/bin/python3 "$(command -v python3 2>/dev/null)" python3; do
  [ -n "$candidate" ] || continue
  if "$candidate" -c "import torch" >/dev/null 2>&1; then
    echo "$candidate"
    exit 0
  fi
done
echo "no python3 with torch found: run scripts/setup.sh --reference (installs Debian's python3-torch) or set GTPO_PYTHON" >&2
exit 1
