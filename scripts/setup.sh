#!/usr/bin/env bash
# Installs the Debian packages gtpo needs. Idempotent: quiet and fast when all are present.
#   scripts/setup.sh               build and test dependencies (what scripts/test.sh and demo.sh need)
#   scripts/setup.sh --reference   also PyTorch and numpy (reference fixtures, benchmarks)
#   scripts/setup.sh --plots       also matplotlib (scripts/compare.sh plots)
set -euo pipefail

# clang and libclang-rt-14-dev (its ASan/UBSan/libFuzzer runtimes): the sanitizer and fuzzing stage of
# scripts/test.sh (scripts/test_sanitize.sh, scripts/fuzz.sh); libomp-dev is clang's OpenMP.
packages=(build-essential cmake libeigen3-dev libyaml-cpp-dev catch2 nlohmann-json3-dev libomp-dev
          clang libclang-rt-14-dev)
for arg in "$@"; do
  case "$arg" in
    --reference) packages+=(python3 python3-torch python3-numpy) ;;
    --plots) packages+=(python3 python3-numpy python3-matplotlib) ;;
    *) echo "setup.sh: unknown option '$arg' (valid: --reference, --plots)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
