#!/usr/bin/env bash
# The shuffle buffer's full check (issue 47): all of Fashion-MNIST's 60,000 training images written as ONE
# class-sorted WebDataset shard and as an ImageFolder, the same short recipe trained on both, val top-1 on the
# 10,000 test images (as a folder) compared: the shard with the default buffer (auto: here the whole shard), with
# WebDataset's usual 1000 and without one (0). tests/train/test_wds_training.cpp runs the same check on 6,000 images.
#
#   bench/wds-sorted-shard.sh [DDPX] [WORK_DIR] [extra train flags...]
#
# Prints one line per run ("folder: top-1 X%") and the differences; docs/results.md records a run.
set -euo pipefail
ddpx=${1:-build/src/cli/ddpx}
work=${2:-/tmp/ddpx-wds-sorted}
shift $(( $# > 2 ? 2 : $# ))
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
[ -d "$work/train" ] || python3 "$here/fashion_files.py" folder "$work/train" --split train
[ -f "$work/sorted.tar" ] || python3 "$here/fashion_files.py" shard "$work/sorted.tar" --split train --class-sorted
[ -d "$work/val" ] || python3 "$here/fashion_files.py" folder "$work/val" --split test
recipe=(--device cpu --model mlp:image=28,channels=1,layers=1,width=64,classes=10 --val "folder:$work/val"
        --augment resize --steps 2811 --lr-schedule cosine --batch 64 --optimizer adamw --lr 0.002
        --eval-every 100000 --workers 2 --warmup 0 --seed 2 "$@")
top1() { grep '^accuracy:' | sed -n 's/.*top-1 \([0-9.]*\)%.*/\1/p'; }
folder=$("$ddpx" train --data "folder:$work/train" "${recipe[@]}" 2>&1 | top1)
sorted=$("$ddpx" train --data "wds:$work/sorted.tar" "${recipe[@]}" 2>&1 | top1)
webdataset=$("$ddpx" train --data "wds:$work/sorted.tar" "${recipe[@]}" --shuffle-buffer 1000 2>&1 | top1)
unbuffered=$("$ddpx" train --data "wds:$work/sorted.tar" "${recipe[@]}" --shuffle-buffer 0 2>&1 | top1)
echo "folder:                                              top-1 $folder%"
echo "one class-sorted shard, --shuffle-buffer auto (default): top-1 $sorted%"
echo "one class-sorted shard, --shuffle-buffer 1000:           top-1 $webdataset%"
echo "one class-sorted shard, --shuffle-buffer 0 (off):        top-1 $unbuffered%"
awk -v a="$folder" -v b="$sorted" 'BEGIN { d = b - a; printf "default buffer - folder: %+.2f points (%s)\n", d, (d >= -1 && d <= 1) ? "within 1 point" : "NOT within 1 point" }'
