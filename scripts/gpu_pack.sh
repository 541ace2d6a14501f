#!/usr/bin/env bash
# Builds the GPU check's binaries here (a machine with nvcc but no GPU) and packs them for a GPU machine
# that has the CUDA driver and runtime libraries but cannot install this project's build dependencies:
#
#   bash scripts/gpu_pack.sh [OUT.tar.gz]        # default .gpu-pack/gtpo-gpu.tar.gz (git-ignored)
#   bash scripts/gpu_check.sh --prebuilt OUT.tar.gz   # there, from a checkout of the same commit
#
# The pack holds the CUDA build's gtpo and the test binaries the check runs (cuda, runtime, model suites),
# stripped, with CTest's files, and the shared libraries they need that a bare CUDA image lacks (yaml-cpp,
# Oniguruma, utf8proc, OpenMP; libstdc++ and libgcc_s in a fallback folder used only if the machine's own
# are too old). CUDA's libraries (cuBLAS) are not packed: the GPU machine's are used. The binaries are
# built for x86-64-v3 (AVX2 and FMA) rather than this CPU (-march=native), so that they run on the GPU
# machine's processor; MPI is off (one GPU, one process). Environment: GTPO_GPU_PACK_BUILD_DIR (default
# build-gpu), GTPO_JOBS (build parallelism, default every core).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GTPO_GPU_PACK_BUILD_DIR:-$root/build-gpu}"
out="${1:-$root/.gpu-pack/gtpo-gpu.tar.gz}"
jobs="${GTPO_JOBS:-$(nproc)}"
targets=(gtpo test_cuda test_runtime test_model)

command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "gpu_pack: no nvcc here (install the CUDA toolkit, or build on the GPU machine with gpu_check.sh)" >&2; exit 2; }
bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DGTPO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DGTPO_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DGTPO_MPI=OFF >/dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
rel="$(realpath --relative-to="$root" "$build_dir")"
mkdir -p "$stage/$rel/tests" "$stage/lib/fallback"
# CTest's files: every CTestTestfile.cmake and the discovered test lists (absolute paths of this checkout).
(cd "$build_dir" && find . -name CTestTestfile.cmake -o -name '*_tests-*.cmake' -o -name '*_include-*.cmake') |
  while read -r f; do mkdir -p "$stage/$rel/$(dirname "$f")"; cp "$build_dir/$f" "$stage/$rel/$f"; done
cp "$build_dir/gtpo" "$stage/$rel/gtpo"
for t in test_cuda test_runtime test_model; do cp "$build_dir/tests/$t" "$stage/$rel/tests/$t"; done
strip "$stage/$rel/gtpo" "$stage/$rel"/tests/test_{cuda,runtime,model}

# Shared libraries: everything ldd resolves except the C library's own and CUDA's.
ldd "$build_dir/gtpo" "$build_dir"/tests/test_{cuda,runtime,model} | awk '/=> \//{print $3}' | sort -u |
  while read -r lib; do
    name="$(basename "$lib")"
    case "$name" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*) ;;
      libstdc++*|libgcc_s*) cp -L "$lib" "$stage/lib/fallback/$name" ;;
      *) cp -L "$lib" "$stage/lib/$name" ;;
    esac
  done
# Where the binaries expect the checkout to be (test fixtures, gtpo's path in CTest's files).
printf '%s\n' "$root" >"$stage/source-dir"
printf '%s\n' "$rel" >"$stage/build-dir"
git -C "$root" rev-parse HEAD >"$stage/commit" 2>/dev/null || echo unknown >"$stage/commit"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -czf "$out" .
echo "gpu_pack: $out ($(du -h "$out" | cut -f1)), built from $(cat "$stage/commit")$(git -C "$root" diff --quiet 2>/dev/null || echo ' with uncommitted changes')"
