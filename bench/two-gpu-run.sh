#!/usr/bin/env bash
# Issue 6's run on a 2-GPU machine (kind nvidia-h200-x2), one link per device call:
#   bash bench/two-gpu-run.sh nvlink     # NCCL over NVLink (default transport)
#   bash bench/two-gpu-run.sh shm        # NCCL_P2P_DISABLE=1: host shared memory, the seed's PCIe machine
# Each call: topology, NCCL's transport from its own log, `ddpx allreduce` on the link, then `ddpx bench` over
# fp32/bf16 x every hook x {one 2000 MB bucket, --no-overlap, 25 MB, 100 MB} x {1, 2} GPUs with the PyTorch
# anchor for the matching rows. Everything lands under $OUT (default ./out); the tables are printed last.
# Estimated 8-9 minutes per call at 40 measured steps per row; set STEPS to trade precision for time.
set -uo pipefail
cd "$(dirname "$0")/.."
LINK=${1:?usage: bench/two-gpu-run.sh nvlink|shm}
OUT=${OUT:-out}
STEPS=${STEPS:-50}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DDPX=${DDPX:-build/src/cli/ddpx}
if ! "$DDPX" model --model vit_l_32 --brief >/dev/null 2>&1; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build build -j "$(nproc)" --target ddpx >"$OUT/build.log" 2>&1 || { grep -A8 error "$OUT/build.log" | head -40; exit 1; }
fi
P2P_FLAG=()
if [[ $LINK == shm ]]; then export NCCL_P2P_DISABLE=1; P2P_FLAG=(--p2p-disabled); fi

nvidia-smi topo -m | tee "$OUT/nvidia-smi-topo.txt"
NCCL_DEBUG=INFO "$DDPX" allreduce --nproc-per-node 2 --sizes 1M >"$OUT/nccl-transport.log" 2>&1
"$DDPX" topo "${P2P_FLAG[@]}" --nccl-log "$OUT/nccl-transport.log" --json "$OUT/topo.json" | tee "$OUT/topo.txt"
"$DDPX" allreduce --nproc-per-node 2 --sizes 1K:2G --json "$OUT/peak-$LINK.json" | tee "$OUT/allreduce-$LINK.txt"

run_bench() {  # name, extra bench flags..., -- train flags
  local name=$1; shift
  timeout 420 "$DDPX" bench --models vit_l_32 --precisions fp32,bf16 --gpus 1,2 --steps "$STEPS" --warmup 10 \
    --out "$OUT/bench-$LINK-$name" "$@" | tail -60
}
run_bench buckets --hooks allreduce,fp16,bf16,powersgd:1,powersgd:4 --bucket-mb 2000,25,100 -- --ddp --workers 14
run_bench no-overlap --hooks allreduce,fp16,bf16,powersgd:1,powersgd:4 --bucket-mb 2000 --pytorch off -- --ddp --no-overlap --workers 14
