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
# The GPU when the built ddpx can use one (`ddpx --version` says "devices: cpu, cuda" when it was built with CUDA and
# sees a GPU).
version=$("$DDPX" --version)
if [[ $version == *$'\n'"devices: cpu, cuda"* ]]; then
  exec "$DDPX" train --device cuda --model vit_l_32 --batch 32 --steps 100 --precision bf16 --data synthetic "$@"
fi

FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
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
