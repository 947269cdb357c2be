#!/usr/bin/env bash
# The seed's table on N GPUs of one machine (issue 6: N = 2 on nvidia-h200-x2; issue 7: 4 or 8): ViT-L/32,
# batch 32 per GPU, synthetic data, SGD, 50 measured steps per row, ddpx beside the PyTorch anchor. One link and
# one part per device call:
#   bash bench/multi-gpu-run.sh 2 nvlink base      # topology, NCCL's transport from its log, `ddpx allreduce`
#                                                  # sweep; fp32/bf16: 1 GPU without DDP, 1 GPU with DDP, N GPUs
#                                                  # with one 2000 MB bucket, N GPUs with --no-overlap (the
#                                                  # seed's setting); a trace and a report of the N-GPU fp32 run
#   bash bench/multi-gpu-run.sh 2 nvlink hooks     # fp32/bf16 x fp16, bf16, powersgd:1, powersgd:4 (2000 MB)
#   bash bench/multi-gpu-run.sh 2 nvlink buckets   # fp32/bf16 x allreduce, bf16 x bucket caps 25 and 100 MB
#   bash bench/multi-gpu-run.sh 8 nvlink tune      # `ddpx tune` in bf16, then the tuned config measured
#   ... and the same with `shm` (NCCL_P2P_DISABLE=1: host shared memory, the seed's PCIe machine).
# The machine stays warm between calls, so `build/` is built once. Rows per part: base 8 ddpx + 6 PyTorch,
# hooks 10 + 10, buckets 10 + 10 (each part also re-measures the two 1-GPU rows its efficiencies refer to);
# tune: its trials plus one measured run.
# Everything lands under $OUT/<link>-<part>/ (default ./out); the part's table is printed last.
# Smoke test without GPUs (checks the flow, not the numbers): DEVICE=cpu MODEL=vit_tiny_test STEPS=8 WARMUP=2
#   BATCH=4 PRECISIONS=fp32 WORKERS=1 bash bench/multi-gpu-run.sh 2 shm base
set -uo pipefail
cd "$(dirname "$0")/.."
USAGE="usage: bench/multi-gpu-run.sh N nvlink|shm base|hooks|buckets|tune"
N=${1:?$USAGE}
LINK=${2:?$USAGE}
PART=${3:?$USAGE}
[[ $N =~ ^[0-9]+$ && $N -ge 2 ]] || { echo "N '$N': expected a GPU count of at least 2"; exit 2; }
[[ $LINK == nvlink || $LINK == shm ]] || { echo "link '$LINK': expected nvlink or shm"; exit 2; }
[[ $PART =~ ^(base|hooks|buckets|tune)$ ]] || { echo "part '$PART': expected base, hooks, buckets or tune"; exit 2; }
DEVICE=${DEVICE:-cuda}
MODEL=${MODEL:-vit_l_32}
STEPS=${STEPS:-60}   # 10 warm-up + 50 measured
WARMUP=${WARMUP:-10}
BATCH=${BATCH:-32}
WORKERS=${WORKERS:-14}
# Every training run: loader threads, and a stalled collective ends the run in 60 s instead of the default 300.
TRAIN=(--workers "$WORKERS" --comm-timeout 60)
OUT_DIR=${OUT:-out}/$N-$LINK-$PART
mkdir -p "$OUT_DIR"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
DDPX=${DDPX:-build/src/cli/ddpx}
if ! "$DDPX" model --model "$MODEL" --brief >/dev/null 2>&1; then
  echo "[multi-gpu] building ddpx"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT_DIR/configure.log" 2>&1 || { tail -30 "$OUT_DIR/configure.log"; exit 1; }
  cmake --build build -j "$(nproc)" --target ddpx >"$OUT_DIR/build.log" 2>&1 || { grep -A8 error "$OUT_DIR/build.log" | head -40; exit 1; }
fi
TOPO_FLAGS=()
if [[ $LINK == shm ]]; then export NCCL_P2P_DISABLE=1; TOPO_FLAGS=(--p2p-disabled); fi
echo "[multi-gpu] $(date -u '+%F %T UTC') $N GPUs, link $LINK, part $PART, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

bench() {  # name, bench flags... [-- train flags]
  local name=$1; shift
  echo "[multi-gpu] bench $name"
  timeout 540 "$DDPX" bench --device "$DEVICE" --models "$MODEL" --precisions "${PRECISIONS:-fp32,bf16}" \
    --steps "$STEPS" --warmup "$WARMUP" --batch "$BATCH" --out "$OUT_DIR/$name" "$@" | grep -E "^\[|^\|"
}
# Scaling efficiency compares each N-GPU row with the 1-GPU rows of its own bench, so every part measures them;
# without --ddp in the train flags those are plain single-GPU runs (the issue's reference), while N-GPU rows
# always run DDP.
case $PART in
  base)
    if [[ $DEVICE == cuda ]]; then
      nvidia-smi topo -m | tee "$OUT_DIR/nvidia-smi-topo.txt"
      NCCL_DEBUG=INFO "$DDPX" allreduce --nproc-per-node "$N" --sizes 1M >"$OUT_DIR/nccl-transport.log" 2>&1
      "$DDPX" topo "${TOPO_FLAGS[@]}" --nccl-log "$OUT_DIR/nccl-transport.log" --json "$OUT_DIR/topo.json" | tee "$OUT_DIR/topo.txt"
      "$DDPX" allreduce --nproc-per-node "$N" --sizes 1K:2G --json "$OUT_DIR/peak.json" | tee "$OUT_DIR/allreduce.txt"
    else
      "$DDPX" allreduce --device cpu --nproc-per-node "$N" --sizes 1K:16M --json "$OUT_DIR/peak.json" | tail -4
    fi
    bench scaling --gpus "1,$N" --hooks allreduce --bucket-mb 2000 -- "${TRAIN[@]}"
    bench ddp-one-gpu --gpus 1 --hooks allreduce --bucket-mb 2000 -- --ddp "${TRAIN[@]}"
    bench no-overlap --gpus "$N" --hooks allreduce --bucket-mb 2000 --pytorch off -- --ddp --no-overlap "${TRAIN[@]}"
    # One communication-bound configuration with its trace and report (the seed's one large bucket, fp32).
    echo "[multi-gpu] trace of the $N-GPU fp32 run"
    timeout 300 "$DDPX" train --device "$DEVICE" --model "$MODEL" --precision fp32 --batch "$BATCH" --steps 30 \
      --warmup 10 --nproc-per-node "$N" --bucket-mb 2000 "${TRAIN[@]}" --report "$OUT_DIR/fp32.report.json" \
      --trace "$OUT_DIR/fp32.trace.json" >"$OUT_DIR/fp32.log" 2>&1
    "$DDPX" report "$OUT_DIR/fp32.report.json" --peak "$OUT_DIR/peak.json" | tail -30
    ;;
  hooks)
    bench hooks --gpus "1,$N" --hooks fp16,bf16,powersgd:1,powersgd:4 --bucket-mb 2000 -- "${TRAIN[@]}"
    ;;
  buckets)
    bench buckets --gpus "1,$N" --hooks allreduce,bf16 --bucket-mb 25,100 -- "${TRAIN[@]}"
    ;;
  tune)
    # Lossless hooks and PowerSGD allowed; then the tuned config beside the fixed table's best (the other parts).
    echo "[multi-gpu] tune"
    timeout 420 "$DDPX" tune --out "$OUT_DIR/tuned.cfg" --hooks allreduce,bf16 --allow-lossy powersgd:4 -- \
      --device "$DEVICE" --model "$MODEL" --precision "${TUNE_PRECISION:-bf16}" --batch "$BATCH" \
      --nproc-per-node "$N" "${TRAIN[@]}" 2>&1 | tail -25
    timeout 300 "$DDPX" train --config "$OUT_DIR/tuned.cfg" --device "$DEVICE" --model "$MODEL" \
      --precision "${TUNE_PRECISION:-bf16}" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP" \
      --nproc-per-node "$N" "${TRAIN[@]}" --report "$OUT_DIR/tuned.report.json" 2>&1 | grep -E "summary|verdict"
    ;;
esac
echo "[multi-gpu] tables:"
for md in "$OUT_DIR"/*/bench.md; do [[ -f $md ]] && { echo "== $md"; sed -n '/^|/p' "$md"; }; done
