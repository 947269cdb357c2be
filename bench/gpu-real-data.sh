#!/usr/bin/env bash
# Real data at GPU speed (issue 42, step 2), one device call after bench/gpu-check.sh built ddpx: ViT-L/32 bf16
# batch 32 trained from ImageNet-sized JPEGs of real photographs, from ddpx's packed format (JPEG and raw records,
# longer side 256) and from the JPEG folder itself, against the same run on synthetic-device data (made on the GPU:
# the input costs nothing), each under `taskset -c $CORES` (8 cores by default, the target's budget per GPU).
# The table (bench/summarize.py) gives steps/s, images/s and the data wait's share of the step per row; the target
# is the packed JPEG row at 95% or more of the synthetic-device row's images/s. The row pack_jpeg_device_norm copies
# uint8 batches and normalizes them on the GPU (--normalize device, opt-in until this run verifies it); the row
# pack_jpeg_randaugment adds torchvision's RandAugment(2, 9) on the loader threads (--randaugment 2,9), whose target
# is the same 95%.
# Usage (GPU machine, repo root): bash bench/gpu-real-data.sh   [IMAGES=6400 STEPS=400 CORES=0-7 WORKERS=7]
# Dry run on a CPU (the same files and commands, a small model, no figure that means anything):
#   DEVICE=cpu PRECISION=fp32 MODEL=vit_tiny_test SYNTHETIC=synthetic IMAGES=200 STEPS=3 bash bench/gpu-real-data.sh
# The photographs come from python3-skimage (or .gpudeps/photos, which bench/gpu-check.sh puts in its place).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DDPX=${DDPX:-build/src/cli/ddpx}
IMAGES=${IMAGES:-6400}
STEPS=${STEPS:-400}
WARMUP=${WARMUP:-40}
CORES=${CORES:-0-7}
WORKERS=${WORKERS:-7}
DATA=${DATA:-/tmp/ddpx-real-data}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
MODEL=${MODEL:-vit_l_32}
SYNTHETIC=${SYNTHETIC:-synthetic-device}
PYTHON=${PYTHON:-python3}
[[ -x $DDPX ]] || { echo "[real-data] $DDPX is not built: run bench/gpu-check.sh first"; exit 1; }
"$DDPX" pack --help >/dev/null 2>&1 || { echo "[real-data] this ddpx has no 'pack' command: nothing to measure"; exit 1; }
mkdir -p "$DATA"
started=$SECONDS
if [[ ! -d $DATA/folder ]]; then
  "$PYTHON" bench/make_jpeg_folder.py "$DATA/folder" --images "$IMAGES" --classes 100 --quality 90 >"$OUT/make_folder.log" 2>&1 \
    || { tail -5 "$OUT/make_folder.log"; exit 1; }
fi
echo "[real-data] $IMAGES JPEGs in $((SECONDS - started)) s; $(du -sh "$DATA/folder" | cut -f1)"
for store in jpeg:90 raw; do
  pack=$DATA/train-${store%%:*}.pack
  [[ -f $pack ]] || "$DDPX" pack "folder:$DATA/folder" "$pack" --max-side 256 --store "$store" >"$OUT/pack_${store%%:*}.log" 2>&1 \
    || { tail -5 "$OUT/pack_${store%%:*}.log"; exit 1; }
  echo "[real-data] pack --store $store: $(du -h "$pack" | cut -f1)"
done
nproc_set=$(taskset -c "$CORES" nproc)
echo "[real-data] cores: $CORES ($nproc_set), loader workers $WORKERS"
row() {  # name, --data value, extra flags...
  local name=$1 data=$2
  shift 2
  echo "[real-data] $name: --data $data"
  timeout 300 taskset -c "$CORES" "$DDPX" train --device "$DEVICE" --model "$MODEL:classes=100" --precision "$PRECISION" --batch 32 \
    --steps "$STEPS" --warmup "$WARMUP" --data "$data" --workers "$WORKERS" --log-every 100 \
    --report "$OUT/ddpx_$name.json" "$@" >"$OUT/ddpx_$name.log" 2>&1
  local rc=$?
  grep -E "summary|verdict|data wait|error" "$OUT/ddpx_$name.log" | sed "s/^/    /" | head -8
  [[ $rc -ne 0 ]] && tail -5 "$OUT/ddpx_$name.log"
}
row synthetic_device "$SYNTHETIC"
row pack_jpeg "pack:$DATA/train-jpeg.pack"
row pack_jpeg_device_norm "pack:$DATA/train-jpeg.pack" --normalize device
row pack_raw "pack:$DATA/train-raw.pack"
row pack_jpeg_randaugment "pack:$DATA/train-jpeg.pack" --randaugment 2,9
row folder_jpeg "folder:$DATA/folder"
"$PYTHON" bench/summarize.py "$OUT" | tee "$OUT/real-data-table.md"
"$PYTHON" - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def ips(name):
    try:
        return json.load(open(os.path.join(out, f"ddpx_{name}.json")))["throughput"]["images_per_s"]
    except (OSError, ValueError, KeyError):
        return None
base = ips("synthetic_device")
for name in ("pack_jpeg", "pack_jpeg_device_norm", "pack_raw", "pack_jpeg_randaugment", "folder_jpeg"):
    value = ips(name)
    if base and value:
        print(f"{name}: {value:.0f} images/s = {100 * value / base:.1f}% of synthetic-device ({base:.0f})")
PY
