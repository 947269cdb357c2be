#!/usr/bin/env bash
# Kernel time by family of one steady-state `ddpx train` step (the third batch, eager so that every kernel is its
# own launch), measured by Nsight Compute one kernel at a time and summed by ncu_kernel_summary.py: the table of
# docs/results.md's "Where the time goes now" sections. Kernel times are serialized, so their sum exceeds a
# graph-replayed step. Clocks are left as they run (--clock-control none, which this machine needs).
# Usage (repo root, GPU machine, after a build): bash bench/ncu-step.sh [extra ddpx train flags]
# e.g. bash bench/ncu-step.sh --model vit_b_16 --batch 256. Defaults: ViT-L/32 bf16 batch 32, GPU-generated data.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
DDPX=${DDPX:-build/src/cli/ddpx}
TAG=${TAG:-ncu_step}
command -v ncu >/dev/null || { echo "ncu-step: no ncu on this machine" >&2; exit 2; }
timeout "${NCU_TIMEOUT:-300}" ncu --clock-control none --nvtx --nvtx-include "Batch 3/" \
  --metrics gpu__time_duration.sum --csv \
  "$DDPX" train --device cuda --model vit_l_32 --precision bf16 --batch 32 --steps 4 --warmup 1 --cuda-graph off \
  --data synthetic-device --log-every 10 "$@" >"$OUT/$TAG.csv" 2>&1
status=$?
[[ $status -ne 0 ]] && { echo "ncu-step: ncu exited $status"; tail -5 "$OUT/$TAG.csv"; }
python3 bench/ncu_kernel_summary.py "$OUT/$TAG.csv" "${TOP:-16}" | tee "$OUT/$TAG.md"
exit $status
