#!/usr/bin/env bash
# One device call that measures ddpx against the PyTorch anchor on one GPU (issue 3's benchmark):
# ViT-L/32, batch 32, synthetic data, SGD; ddpx in fp32 / tf32 / bf16 (+ DDP world 1, + bf16 hook, + no graph,
# + data generated on the GPU), PyTorch eager fp32 / tf32 / bf16 autocast and torch.compile reduce-overhead bf16;
# and the large-batch row: ViT-B/16 batch 256 bf16 against torch.compile reduce-overhead. The table (summarize.py)
# gives steps/s, images/s and MFU per row.
# Writes logs and JSON under $OUT (default ./out) and prints the Markdown table last.
# Usage: bash bench/gpu-run.sh [quick]     (quick: fewer configurations, for a smoke run)
#        ROWS="bf16 tf32 compile_ro_bf16" bash bench/gpu-run.sh   (only the named rows, ddpx's and PyTorch's names
#        as in the logs: for a device budget that cannot pay for the whole table)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DDPX=${DDPX:-build/src/cli/ddpx}
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-10}
nvidia-smi -L | tee "$OUT/gpu.txt"
if ! "$DDPX" model --model vit_l_32 --brief >/dev/null 2>&1; then
  echo "[bench] building ddpx here"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build build -j "$(nproc)" --target ddpx >"$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; exit 1; }
fi

wanted() { [[ -z "${ROWS:-}" || " $ROWS " == *" $1 "* ]]; }

run_ddpx() {  # name, flags...
  local name=$1; shift
  wanted "$name" || return 0
  echo "[bench] ddpx $name: $*"
  local started=$SECONDS
  timeout 240 "$DDPX" train --device cuda --model vit_l_32 --batch 32 --steps "$STEPS" --warmup "$WARMUP" \
    --data synthetic --workers ${WORKERS:-14} --log-every 20 --report "$OUT/ddpx_$name.json" "$@" >"$OUT/ddpx_$name.log" 2>&1
  local rc=$?
  echo "    wall time $((SECONDS - started)) s"
  grep -E "summary|verdict|error" "$OUT/ddpx_$name.log" | sed "s/^/    /"
  [[ $rc -ne 0 ]] && tail -5 "$OUT/ddpx_$name.log"
}
run_torch() {  # name, flags...
  local name=$1; shift
  wanted "$name" || return 0
  echo "[bench] pytorch $name: $*"
  local started=$SECONDS
  timeout 300 python3 bench/pt_vit_anchor.py --steps 50 --tag "$name" "$@" >"$OUT/torch_$name.log" 2>&1 || tail -5 "$OUT/torch_$name.log"
  echo "    wall time $((SECONDS - started)) s"
  grep '^{' "$OUT/torch_$name.log" | tail -1 | tee -a "$OUT/torch.jsonl"
}

run_ddpx bf16 --precision bf16
run_ddpx fp32 --precision fp32
run_ddpx tf32 --precision tf32
run_ddpx bf16_nograph --precision bf16 --cuda-graph off
if [[ "${1:-}" != quick ]]; then
  run_ddpx bf16_ddp1 --precision bf16 --ddp
  # The plain step with fp32 weight gradients: the arithmetic of the cast and PowerSGD hooks' rows, whose buckets
  # are fp32. bf16_ddp1 (the allreduce hook at one rank reads nothing) keeps the default's bf16 weight gradients
  # (Note [bf16 weight gradients in their fp32 slots], model_cuda/cuda_model.hpp; comm_hook_reads_bucket,
  # comm_plan/hook_catalogue.hpp).
  run_ddpx bf16_fp32grads --precision bf16 --weight-grads fp32
  run_ddpx bf16_devicedata --precision bf16 --data synthetic-device
  run_ddpx bf16_ddp1_bf16hook --precision bf16 --ddp --comm-hook bf16
  run_ddpx bf16_ddp1_powersgd4 --precision bf16 --ddp --comm-hook powersgd:4
  run_ddpx b16_bf16 --precision bf16 --model vit_b_16 --batch 256  # issue 11's large-batch row
fi
run_torch eager_bf16 --amp bf16
run_torch eager_fp32 --amp fp32
run_torch eager_tf32 --amp tf32
run_torch compile_ro_bf16 --amp bf16 --compile reduce-overhead --warmup 15
[[ "${1:-}" != quick ]] && run_torch compile_ro_bf16_b16 --model vit_b_16 --batch 256 --amp bf16 \
  --compile reduce-overhead --warmup 15 --steps 30 --workers 14
python3 bench/summarize.py "$OUT" | tee "$OUT/table.md"
