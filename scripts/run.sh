#!/usr/bin/env bash
# The main job: installs what is missing, builds, then trains a small ViT on learnable synthetic data and prints
# progress and the step breakdown. Uses the GPU when the built ddpx can (`ddpx --version` says "devices: cpu, cuda"
# when it was built with CUDA and sees a GPU): ViT-L/32, the seed's model; else the CPU.
# Extra arguments are passed to `ddpx train` (they override the defaults below).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
DDPX=${DDPX_BUILD_DIR:-build}/src/cli/ddpx
version=$("$DDPX" --version)
if [[ $version == *$'\n'"devices: cpu, cuda"* ]]; then
  exec "$DDPX" train --device cuda --model vit_l_32 --batch 32 --steps 100 --precision bf16 --data synthetic "$@"
else
  exec "$DDPX" train --device cpu --model vit_small_test --batch 32 --steps 150 --data learnable \
    --optimizer adamw --lr 1e-3 --log-every 10 "$@"
fi
