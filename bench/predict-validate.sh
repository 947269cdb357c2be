#!/usr/bin/env bash
# ddpx predict against measurement on this machine (issue 12, point 6): one CPU rank records a report per hook and
# bucket cap, `ddpx allreduce --device cpu` measures the link between 2 MPI ranks, `ddpx predict` predicts 2 ranks,
# then 2 MPI ranks train the same configuration and the measured steps/s is compared with the prediction.
# Pinning: the one-rank runs under `taskset -c 0`, the 2-rank runs and the link under mpirun --bind-to core (one
# core per rank); every rank uses --cpu-threads 1 and one loader thread. On a shared machine the numbers are noisy:
# say so wherever they are quoted.
# Usage: bench/predict-validate.sh [OUT_DIR] [DDPX]   (defaults: /tmp/ddpx-predict-validate, build/src/cli/ddpx)
set -euo pipefail
out=${1:-/tmp/ddpx-predict-validate}
ddpx=${2:-$(dirname "$0")/../build/src/cli/ddpx}
ddpx=$(readlink -f "$ddpx")
model=${MODEL:-custom:image=32,patch=16,layers=4,hidden=384,heads=6,mlp=1536,classes=10}
steps=${STEPS:-40}
warmup=${WARMUP:-10}
batch=${BATCH:-4}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun -np 2 --bind-to core --oversubscribe)
# MPI_YIELD=1: Open MPI's waiting ranks yield the core instead of busy-polling it (mpi_yield_when_idle). With one
# core per rank, a rank whose communication thread polls inside an all-reduce takes that core from its own backward.
if [ "${MPI_YIELD:-0}" = 1 ]; then mpirun+=(--mca mpi_yield_when_idle 1); fi
mkdir -p "$out"
cd "$out"
common=(--device cpu --model "$model" --batch "$batch" --steps "$steps" --warmup "$warmup" --workers 1
        --cpu-threads 1 --log-every 10)

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# mpirun: ${mpirun[*]}"
echo "# model $model, batch $batch, $steps steps ($warmup warm-up); ddpx $("$ddpx" --version)"
"${mpirun[@]}" "$ddpx" allreduce --device cpu --sizes 4K:64M:4 --iters 10 --warmup 3 --json link.json > link.log
echo "# link: $(grep 'avg bus bandwidth' link.log)"

printf "%-10s %6s %12s %12s %8s %9s\n" hook cap_mb predicted measured error exposed
for hook in allreduce bf16; do
  for cap in 25 2000; do
    tag=$hook-$cap
    taskset -c 0 "$ddpx" train "${common[@]}" --ddp --comm-hook "$hook" --bucket-mb "$cap" \
      --report one-$tag.json > one-$tag.log 2>&1
    "$ddpx" predict one-$tag.json --link link.json --ranks 2 --hooks "$hook" --bucket-cap-mb "$cap" \
      --json predict-$tag.json > predict-$tag.log
    "${mpirun[@]}" "$ddpx" train "${common[@]}" --comm-hook "$hook" --bucket-mb "$cap" \
      --report two-$tag.json > two-$tag.log 2>&1
    python3 - "$hook" "$cap" predict-$tag.json two-$tag.json <<'PY'
import json, sys
hook, cap, predicted_file, measured_file = sys.argv[1:]
row = json.load(open(predicted_file))["rows"][0]
measured = json.load(open(measured_file))["throughput"]["steps_per_s"]
error = (row["steps_per_s"] - measured) / measured * 100
print(f"{hook:<10} {cap:>6} {row['steps_per_s']:>12.2f} {measured:>12.2f} {error:>+7.1f}% {row['exposed_comm_ms']:>7.2f}ms")
PY
  done
done
echo "# files in $out (reports one-*.json, two-*.json; predictions predict-*.json; link.json)"
