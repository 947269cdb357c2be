#!/usr/bin/env bash
# The main job: installs what is missing, builds, then trains and prints progress, a summary, the step breakdown and
# a verdict. With a GPU: ViT-L/32 (the seed's model) on synthetic data, for speed. Without one: a real training run,
# an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist, which scripts/install-deps.sh installs) for 3 epochs on the
# CPU with torchvision's recipe (warm-up then cosine, label smoothing, no weight decay on biases), evaluated on the
# 10,000 test images every epoch; the test top-1 is printed at the end beside the accuracies published with the data
# set. Extra arguments are passed to `ddpx train` (they override the defaults below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh ddpx  # the executable alone: scripts/test.sh builds the tests
DDPX=${DDPX_BUILD_DIR:-build}/src/cli/ddpx
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}

# Prints each line of a training run as it comes and, at the end, the seconds from the start to the first evaluation
# at or above each of the targets (the time to accuracy).
time_to_accuracy() {
  local start=$EPOCHREALTIME line targets=(85 88 90 91) reached=()
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line =~ ^eval\ +([0-9]+)/[0-9]+\ \|.*top-1\ ([0-9.]+)% && $line != *"(EMA)"* ]]; then
      for i in "${!targets[@]}"; do
        [[ -z ${reached[$i]:-} ]] && awk -v a="${BASH_REMATCH[2]}" -v t="${targets[$i]}" 'BEGIN {exit !(a >= t)}' &&
          reached[$i]=$(awk -v a="$start" -v b="$EPOCHREALTIME" -v s="${BASH_REMATCH[1]}" -v x="${BASH_REMATCH[2]}" \
            'BEGIN {printf "%6.1f s (step %d, top-1 %.2f%%)", b - a, s, x}')
      done
    fi
  done
  echo
  echo "time to accuracy (from the start of the run, evaluation included):"
  for i in "${!targets[@]}"; do printf '  top-1 %s%%: %s\n' "${targets[$i]}" "${reached[$i]:-not reached}"; done
}

# The GPU when the built ddpx can use one (`ddpx --version` says "devices: cpu, cuda" when it was built with CUDA and
# sees a GPU): ViT-L/32's speed on synthetic data. DDPX_GPU_JOB=fmnist-vit first trains a ViT on Fashion-MNIST with
# the recipe (AdamW, warm-up then cosine, label smoothing, clipping, no weight decay on biases and norms) in bf16,
# evaluated every epoch, and prints the time to each accuracy; it becomes the default once a GPU has shown it reaches
# 91% (docs/results.md, "Waiting for a GPU").
version=$("$DDPX" --version)
if [[ $version == *$'\n'"devices: cpu, cuda"* ]]; then
  if [[ ${DDPX_GPU_JOB:-speed} == fmnist-vit ]]; then
    echo "== 1. a ViT (patch 4, 6 layers, width 192) on Fashion-MNIST, 30 epochs, bf16"
    "$DDPX" train --device cuda --precision bf16 \
      --model custom:image=28,patch=4,layers=6,hidden=192,heads=6,mlp=768,classes=10,channels=1 \
      --data "idx:$FMNIST" --val "idx:$FMNIST:test" --mean 0.2860 --std 0.3530 --batch 256 --epochs 30 \
      --optimizer adamw --lr 1e-3 --weight-decay 0.05 --no-decay --lr-schedule cosine --lr-warmup-epochs 2 \
      --lr-warmup-start 0.01 --label-smoothing 0.1 --clip-grad-norm 1 --eval-every epoch --log-every 234 "$@" \
      2>&1 | time_to_accuracy
    echo
    echo "== 2. ViT-L/32's speed: bf16, batch 32, synthetic data, 100 steps"
    exec "$DDPX" train --device cuda --model vit_l_32 --batch 32 --steps 100 --precision bf16 --data synthetic
  fi
  exec "$DDPX" train --device cuda --model vit_l_32 --batch 32 --steps 100 --precision bf16 --data synthetic "$@"
fi

"$DDPX" train --device cpu --model mlp:image=28,channels=1,layers=2,width=256,classes=10 \
  --data "idx:$FMNIST" --val "idx:$FMNIST:test" --mean 0.2860 --std 0.3530 --steps 1404 --batch 128 \
  --optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 5e-4 --no-decay --lr-schedule cosine \
  --lr-warmup-steps 100 --lr-warmup-start 0.1 --label-smoothing 0.1 --eval-every epoch --log-every 100 "$@"

# The data set's published test accuracies (the benchmark table of its README; benchmark/baselines.json beside it
# holds only the scikit-learn benchmark's parameter grid, no accuracies).
readme=/usr/share/doc/dataset-fashion-mnist/README.md.gz
if [[ -r $readme ]]; then
  echo
  echo "Fashion-MNIST test accuracy published with the data set ($readme):"
  zcat "$readme" | awk -F'|' '
    /^\|/ && $4 ~ /^ *0\.[0-9]+ *$/ {
      name = $2; acc = $4; gsub(/^ +| +$/, "", name); gsub(/^ +| +$/, "", acc)
      n++; if (n == 1 || acc + 0 < low + 0) { low = acc; low_name = name }
      if (n == 1 || acc + 0 > high + 0) { high = acc; high_name = name }
      if (name ~ /^(MLP|Human Performance|2 Conv\+pooling$|ResNet18)/) printf "  %-28s %.2f%%\n", name, 100 * acc
    }
    END { if (n) printf "  (%d entries, from %.2f%% (%s) to %.2f%% (%s))\n", n, 100 * low, low_name, 100 * high, high_name }'
fi
