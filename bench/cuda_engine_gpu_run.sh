#!/usr/bin/env bash
# One GPU-machine job for the CUDA engine: run the kernel and model GPU tests and the ViT-L/32 step timing,
# logs under $OUT, a short summary last. Uses binaries carried in .cuda-bin/ (built on the dev machine, with
# libfmt beside them) when they load there, else builds them here with cmake + ninja.
# Usage (on the GPU machine, repo root): bash bench/cuda_engine_gpu_run.sh [extra vit_step_timing flags]
set -uo pipefail
OUT=${OUT:-/tmp/cuda_out}
mkdir -p "$OUT"
BIN=${DDPX_CUDA_BIN:-.cuda-bin}  # DDPX_CUDA_BIN: another carried binary dir
export LD_LIBRARY_PATH="$PWD/$BIN:${LD_LIBRARY_PATH:-}"
if [ ! -x "$BIN/test_model_cuda" ] || ldd "$BIN/test_model_cuda" | grep -q "not found"; then
  echo "== building on this machine"
  cmake -S . -B build-cuda-gpu -G Ninja > "$OUT/build.log" 2>&1 &&
    cmake --build build-cuda-gpu -j16 --target test_kernels test_model_cuda vit_step_timing >> "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  mkdir -p build-cuda-gpu/bin
  cp build-cuda-gpu/tests/kernels/test_kernels build-cuda-gpu/tests/model_cuda/test_model_cuda \
     build-cuda-gpu/bench/vit_step_timing build-cuda-gpu/bin/
  BIN=build-cuda-gpu/bin
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
status=0
for t in test_kernels test_model_cuda; do
  "$BIN/$t" > "$OUT/$t.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED) |Failure|Expected|Which is|actual|error|\[ measured \]|^\[==========\]" "$OUT/$t.log" | head -80
done
"$BIN/vit_step_timing" "$@" 2>&1 | tee "$OUT/timing.log" || status=1
exit $status
