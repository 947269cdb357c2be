#!/usr/bin/env bash
# One device call for the PowerSGD and CUDA-watchdog work: the GPU tests of ddpx_ddp, compute-sanitizer memcheck
# of the PowerSGD kernels, bench/powersgd_timing (hooks over ViT-L/32's bucket plan) and, when the binaries are
# there, an older powersgd_timing_old for before/after and `ddpx train` with --comm-hook powersgd:4.
# Usage: BIN=<folder with test_ddp, powersgd_timing [, powersgd_timing_old, ddpx]> bash bench/powersgd_timing.sh
#        (without BIN it builds test_ddp, powersgd_timing and ddpx in build-gpu). Logs go to $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
if [[ -z "${BIN:-}" ]]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" --target test_ddp powersgd_timing ddpx >"$OUT/build.log" 2>&1 ||
    { grep -B2 -A8 error "$OUT/build.log" | head -40; exit 1; }
  mkdir -p build-gpu/bin
  cp build-gpu/tests/ddp/test_ddp build-gpu/bench/powersgd_timing build-gpu/src/cli/ddpx build-gpu/bin/
  BIN=build-gpu/bin
fi
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$BIN  # host libraries carried along, as a fallback
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader

echo "[gpu tests]"
timeout 60 "$BIN/test_ddp" --gtest_filter='NcclOneRank.*:CastKernels.*:PowerSgdCuda.*:ReducerCuda.*:WatchdogCuda.*' \
  >"$OUT/test_ddp_gpu.log" 2>&1
echo "  rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which is|error" "$OUT/test_ddp_gpu.log" | head -40

echo "[memcheck]"
timeout 45 compute-sanitizer --tool memcheck "$BIN/test_ddp" --gtest_filter='PowerSgdCuda.*' >"$OUT/memcheck.log" 2>&1
echo "  rc=$?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/memcheck.log" | head -5

if [[ -x "$BIN/powersgd_timing_old" ]]; then
  echo "[timing, before]"
  timeout 45 "$BIN/powersgd_timing_old" --steps 10 2>&1 | tee "$OUT/timing_old.txt"
fi
echo "[timing, after]"
timeout 45 "$BIN/powersgd_timing" --steps 10 2>&1 | tee "$OUT/timing_new.txt"

if [[ -x "$BIN/ddpx" ]]; then
  for hook in powersgd:4 allreduce; do
    echo "[ddpx train --comm-hook $hook]"
    timeout 45 "$BIN/ddpx" train --device cuda --model vit_l_32 --batch 32 --precision bf16 --ddp --comm-hook "$hook" \
      --steps 40 --warmup 10 --data synthetic-device --log-every 20 >"$OUT/train_${hook%%:*}.log" 2>&1
    echo "  rc=$?"; grep -E "summary|steps/s|peak device memory|error" "$OUT/train_${hook%%:*}.log" | tail -6
  done
fi
