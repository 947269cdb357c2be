#!/usr/bin/env bash
# Nsight Compute on chosen kernels of a steady-state `ddpx train` step, one device call: the sections that say
# why a kernel is slow (speed of light, occupancy, launch, warp states, memory workload), saved as text and
# summarised one line per launch by ncu_details_summary.py (duration, DRAM and L1 %, occupancy, registers, the
# binding block limit, excess sectors). Clocks and caches are left as they run (--clock-control none, which this
# machine needs, and --cache-control none), so a kernel reading what the one before it wrote sees L2 as in training.
# Kernel selection is ncu's -k regex over the function's base name: `backward_kernel` also matches
# `layernorm_backward_kernel`, so anchor it (`^backward_kernel$`). SKIP and COUNT count matching launches only;
# skip past the first step (warm-up, allocation, one-time uploads).
# Usage (repo root, GPU machine, after a build):
#   KERNELS='^backward_kernel$' SKIP=24 COUNT=2 bash bench/ncu-kernels.sh
#   KERNELS='begin_kernel|slab_kernel' SKIP=365 COUNT=6 bash bench/ncu-kernels.sh \
#     --ddp --comm-hook powersgd:4 --powersgd-start 0
# Extra arguments go to `ddpx train` after the defaults below (ViT-L/32 bf16 batch 32, eager, GPU-generated data).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${KERNELS:?KERNELS: an ncu -k regex over kernel function names, e.g. '^backward_kernel\$'}"
OUT=${OUT:-out}; mkdir -p "$OUT"
DDPX=${DDPX:-build/src/cli/ddpx}
SKIP=${SKIP:-0}
COUNT=${COUNT:-4}
TAG=${TAG:-ncu}
command -v ncu >/dev/null || { echo "ncu-kernels: no ncu on this machine" >&2; exit 2; }
timeout "${NCU_TIMEOUT:-300}" ncu --clock-control none --cache-control none -k "regex:$KERNELS" \
  --launch-skip "$SKIP" --launch-count "$COUNT" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis \
  "$DDPX" train --device cuda --model vit_l_32 --precision bf16 --batch 32 --steps 3 --warmup 1 --cuda-graph off \
  --data synthetic-device --log-every 10 "$@" >"$OUT/$TAG.txt" 2>&1
status=$?
[[ $status -ne 0 ]] && { echo "ncu-kernels: ncu exited $status"; tail -5 "$OUT/$TAG.txt"; }
python3 bench/ncu_details_summary.py "$OUT/$TAG.txt" | tee "$OUT/$TAG.md"
exit $status
