#!/usr/bin/env bash
# torch-ddp-cpu.sh [TRAIN_CNN]: the LibTorch adapter's CPU step against PyTorch's own DDP, 2 ranks over Gloo, in one
# run: examples/torch_ddp/train_cnn (ddpx::torch::DistributedDataParallel, ddpx's launcher, --backend gloo) and
# bench/torch_ddp_cpu_anchor.py (torch.nn.parallel.DistributedDataParallel, Gloo) train the same CNN (--width 16:
# 16k parameters, one bucket) on Fashion-MNIST, 64 images per rank, one intra-op thread per rank, ROUNDS (default
# 3) alternated pairs of STEPS (default 60) steps. Prints every round's ms/step (steps 1..STEPS-1, rank 0) and the
# medians. No GPU; Debian's libtorch-dev and python3-torch (the same LibTorch 1.13 underneath both).
set -euo pipefail
train=${1:-build/examples/torch_ddp/train_cnn}
rounds=${ROUNDS:-3} steps=${STEPS:-60} world=${WORLD:-2} batch=${BATCH:-64} width=${WIDTH:-16}
export OMP_NUM_THREADS=1
python=${PYTHON:-python3}
"$python" -c "import torch" 2>/dev/null || python=/usr/bin/python3  # Debian's python3-torch beside a pyenv python
ours=() theirs=()
for ((round = 1; round <= rounds; ++round)); do
  a=$("$train" --nproc-per-node "$world" --backend gloo --steps "$steps" --batch "$batch" --width "$width" --quiet \
      | sed -n 's/.*train_cnn: \([0-9.]*\) ms\/step.*/\1/p')
  b=$("$python" "$(dirname "$0")/torch_ddp_cpu_anchor.py" --world "$world" --steps "$steps" --batch "$batch" \
      --width "$width" | sed -n 's/.*pytorch_ddp: \([0-9.]*\) ms\/step.*/\1/p')
  echo "round $round: ddpx::torch $a ms/step, PyTorch DDP $b ms/step"
  ours+=("$a") theirs+=("$b")
done
"$python" - "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"median: ddpx::torch {ma:.3f} ms/step, PyTorch DDP {mb:.3f} ms/step, ratio {ma / mb:.3f}")
PY
