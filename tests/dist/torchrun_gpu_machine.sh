#!/usr/bin/env bash
# For the GPU machine (PyTorch 2.x's torchrun on PATH, one or more GPUs), in one device call:
#   1. builds ddpx into ./build-gpu there (the ctest files name absolute source paths, so a build carried from
#      another machine does not serve),
#   2. runs the torchrun tests (`ctest -L torchrun`) against that torchrun: the store protocol of PyTorch 2.x,
#   3. trains ViT-B/32 a few steps under `torchrun --no_python --standalone` with every visible GPU as a rank
#      (one GPU: world 1 with --ddp; the id exchange is then trivial, which is why step 2 exists).
# Logs go to $OUT (or /tmp/ddpx-torchrun); the exit status is the first failing step's.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/ddpx-torchrun}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
build=build-gpu
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/configure.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -n 40 "$out"/*.log; exit 1; }
DDPX_TORCHRUN=${DDPX_TORCHRUN:-torchrun} ctest --test-dir "$build" -L torchrun --output-on-failure -V \
  >"$out/ctest-torchrun.log" 2>&1
tests_status=$?
grep -E "PASS|FAIL|SKIP|Passed|Failed|tests passed" "$out/ctest-torchrun.log"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
((gpus >= 1)) || gpus=1
timeout -k 10 300 "${DDPX_TORCHRUN:-torchrun}" --nproc_per_node "$gpus" --no_python --standalone \
  "$build/src/cli/ddpx" train --device cuda --model vit_b_32 --precision bf16 --steps 20 --ddp \
  >"$out/train-cuda.log" 2>&1
train_status=$?
tail -n 8 "$out/train-cuda.log"
echo "torchrun tests: status $tests_status; torchrun + ddpx train --device cuda ($gpus rank(s)): status $train_status"
((tests_status == 0)) || exit "$tests_status"
exit "$train_status"
