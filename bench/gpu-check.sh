#!/usr/bin/env bash
# Every test on the GPU machine, in one device call: builds everything (Release, Ninja, all cores) and runs the
# whole CTest suite, where the GPU-labelled tests run instead of skipping; then `ddpx topo` and a one-GPU
# `ddpx allreduce` as a smoke test of NVML and NCCL. Logs under $OUT (default ./out); the failures, if any, last.
# Usage (repo root, GPU machine): bash bench/gpu-check.sh
# The GPU image lacks some of Debian's libraries the build needs (libjpeg-turbo, libspng, OpenSSL's headers): made
# here by bench/gpu-deps.sh and carried as .gpudeps, they are found through CMAKE_PREFIX_PATH when present.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
prefix=()
# The tests' real data where Debian puts it (dataset-fashion-mnist, python3-skimage's photographs), from .gpudeps.
if [[ -d .gpudeps/fashion-mnist && ! -d /usr/share/datasets/fashion-mnist ]]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp .gpudeps/fashion-mnist/* /usr/share/datasets/fashion-mnist/
fi
skimage_data=/usr/lib/python3/dist-packages/skimage/data
if [[ -d .gpudeps/photos && ! -d $skimage_data ]]; then mkdir -p "$skimage_data" && cp .gpudeps/photos/* "$skimage_data/"; fi
# Also in the environment, for the configures the tests run themselves (build_conventions): CMake reads it too.
[[ -d .gpudeps/root/usr ]] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.gpudeps/root/usr") &&
  export CMAKE_PREFIX_PATH="$PWD/.gpudeps/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; exit 1; }
nvidia-smi -L
ctest --test-dir build -j 4 --timeout 300 --output-on-failure >"$OUT/ctest.log" 2>&1
status=$?
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped\)" "$OUT/ctest.log" | tail -25
build/src/cli/ddpx topo 2>&1 | tee "$OUT/topo.txt" | head -20
build/src/cli/ddpx allreduce --device cuda --sizes 1M:256M 2>&1 | tee "$OUT/allreduce.txt" | tail -12
exit $status
