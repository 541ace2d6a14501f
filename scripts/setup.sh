#!/usr/bin/env bash
# Installs the Debian packages gtpo needs. Idempotent: quiet and fast when all are present.
#   scripts/setup.sh               build and test dependencies (what scripts/test.sh and demo.sh need;
#                                  chromium: the headless browser in which a test opens a run report)
#   scripts/setup.sh --reference   also PyTorch, numpy and python3-venv (reference fixtures, benchmarks;
#                                  scripts/reference/hf_python.sh adds transformers and tokenizers in .venv-hf)
set -euo pipefail

# python3: the external-reward tests run a Python reward function (tests/apps/test_rewards.cpp).
# libopenmpi-dev, openmpi-bin: data-parallel training under mpirun (docs/distributed.md, tests/apps/test_distributed.cpp).
# clang and libclang-rt-14-dev (its ASan/UBSan/libFuzzer runtimes): the sanitizer and fuzzing stage of
# scripts/test.sh (scripts/test_sanitize.sh, scripts/fuzz.sh); libomp-dev is clang's OpenMP.
# libonig-dev (Oniguruma, the regex engine Hugging Face tokenizers use for Split pre-tokenizers) and
# libutf8proc-dev (Unicode normalization: NFC, NFKC): tokenizer.json support (docs/tokenizers.md).
# libxxhash-dev: checkpoint digests (checksums.xxh128); xxhash: its xxh128sum, which a test checks them with.
packages=(build-essential cmake libeigen3-dev libyaml-cpp-dev catch2 nlohmann-json3-dev libomp-dev chromium python3
          libopenmpi-dev openmpi-bin clang libclang-rt-14-dev libonig-dev libutf8proc-dev libxxhash-dev xxhash)
for arg in "$@"; do
  case "$arg" in
    --reference) packages+=(python3 python3-torch python3-numpy python3-venv) ;;
    --plots) ;;  # accepted for old scripts: the curves are in gtpo report's HTML now, no matplotlib needed
    *) echo "setup.sh: unknown option '$arg' (valid: --reference)" >&2; exit 2 ;;
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
