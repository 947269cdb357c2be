#!/usr/bin/env bash
# Accuracy in bf16 (issue 42 step 3), one device call after bench/gpu-check.sh built ddpx: ddpx --precision bf16
# against PyTorch autocast bf16 (2.11 on the GPU machine) on Fashion-MNIST, the MLP and the small ViT of
# bench/recipe_torch_compare.py, same initial weights, data order and recipe (SGD momentum, warm-up then cosine,
# label smoothing, clipping, no decay on biases and norms; RECIPE=plain: the optimizer and schedule only), two more
# PyTorch seeds for scale. Target: final top-1
# within 0.3 points of PyTorch's, loss curves within seed noise. Each model's table and JSON go under $OUT.
# Usage (GPU machine, repo root): bash bench/gpu-accuracy.sh      [MODELS="mlp vit" DDPX=build/src/cli/ddpx]
# Dry run on a CPU (fp32 on both sides, a few steps): DEVICE=cpu STEPS=30 bash bench/gpu-accuracy.sh
# The data comes from dataset-fashion-mnist (or .gpudeps/fashion-mnist, which bench/gpu-check.sh puts in its place).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DDPX=${DDPX:-build/src/cli/ddpx}
DEVICE=${DEVICE:-cuda}
MODELS=${MODELS:-mlp vit}
PYTHON=${PYTHON:-python3}
[[ $DEVICE == cpu && -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3  # Debian's torch on a CPU machine
steps=()
[[ -n ${STEPS:-} ]] && steps=(--steps "$STEPS")
[[ ${RECIPE:-full} == plain ]] && steps+=(--plain-recipe)
status=0
for model in $MODELS; do
  echo "== $model on $DEVICE"
  "$PYTHON" bench/recipe_torch_compare.py --ddpx "$DDPX" --model "$model" --device "$DEVICE" --work "$OUT/work" \
    "${steps[@]}" 2>&1 | tee "$OUT/accuracy_${model}_${DEVICE}.txt" || status=1
  cp "$OUT/work/${model}_${DEVICE}_compare.json" "$OUT/" 2>/dev/null || status=1
done
rm -rf "$OUT/work"
grep -h "top-1 gap" "$OUT"/accuracy_*_"$DEVICE".txt
exit $status
