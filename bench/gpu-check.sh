#!/usr/bin/env bash
# Every test on the GPU machine, in one device call: builds everything (Release, Ninja, all cores) and runs the
# whole CTest suite, where the GPU-labelled tests run instead of skipping; then `ddpx topo` and a one-GPU
# `ddpx allreduce` as a smoke test of NVML and NCCL. Logs under $OUT (default ./out); the failures, if any, last.
# Usage (repo root, GPU machine): bash bench/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; exit 1; }
nvidia-smi -L
ctest --test-dir build -j 4 --timeout 300 --output-on-failure >"$OUT/ctest.log" 2>&1
status=$?
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped\)" "$OUT/ctest.log" | tail -25
build/src/cli/ddpx topo 2>&1 | tee "$OUT/topo.txt" | head -20
build/src/cli/ddpx allreduce --device cuda --sizes 1M:256M 2>&1 | tee "$OUT/allreduce.txt" | tail -12
exit $status
