#!/usr/bin/env bash
# torch-ddp-gpu.sh: the LibTorch adapter's CUDA form and a PyTorch NCCL trace on the GPU machine (issue 41; CPU runs
# are CI's). Builds train_cnn and ddpx against the LibTorch inside the machine's PyTorch wheel
# (torch.utils.cmake_prefix_path; .gpudeps/root/usr too where bench/gpu-deps.sh made it), then:
#   1. train_cnn --device cuda, one rank (self backend, gradients on the GPU, the CUDA reducer): the fixture's 6
#      steps reach PyTorch's CPU weights within 1e-3 (cuDNN's convolutions, TF32 allowed, differ from the CPU's;
#      the steps move the weights by 2e-2, a missing average by as much); then every hook at one rank.
#   2. with 2+ GPUs: 2 ranks under torchrun over NCCL, the same check; and tools/record_torch_profile.py --nccl
#      records PyTorch's own DDP over NCCL, which `ddpx report --torch-profile` reads (the traces land in $OUT).
# Prints PASS/FAIL per line; exit status 1 when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || { echo "FAIL: no PyTorch"; exit 1; }
prefix="$torch_prefix"
[[ -d .gpudeps/root/usr ]] && prefix="$PWD/.gpudeps/root/usr;$torch_prefix"
cmake -S . -B build-torch -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$OUT/torch-configure.log" 2>&1 || { tail -30 "$OUT/torch-configure.log"; exit 1; }
grep -E "LibTorch|CUDA path" "$OUT/torch-configure.log"
cmake --build build-torch -j "$(nproc)" --target train_cnn ddpx >"$OUT/torch-build.log" 2>&1 ||
  { grep -B2 -A8 error "$OUT/torch-build.log" | head -60; exit 1; }
train=build-torch/examples/torch_ddp/train_cnn
fixtures=tests/fixtures/torch_ddp
common=(--data "$fixtures" --image-size 16 --steps 6 --lr 0.1 --quiet --device cuda --timeout 60)
status=0
check() {  # check NAME COMMAND...: PASS when it exits 0
  local name=$1
  shift
  if "$@" >"$OUT/$name.log" 2>&1; then echo "PASS $name: $(grep -h 'max |' "$OUT/$name.log" | tail -1)"
  else echo "FAIL $name (status $?):"; tail -8 "$OUT/$name.log"; status=1; fi
}
check cuda_world1 "$train" "${common[@]}" --batch 12 --expect "$fixtures/expected_single.f32" --tolerance 1e-3
for hook in fp16 bf16 powersgd:1:0; do
  check "cuda_world1_${hook//:/_}" "$train" "${common[@]}" --batch 12 --hook "$hook" \
    --expect "$fixtures/expected_single.f32" --tolerance 5e-2
done
gpus=$(nvidia-smi -L | wc -l)
if ((gpus >= 2)); then
  check cuda_world2_nccl torchrun --nproc_per_node 2 --no_python --standalone "$train" "${common[@]}" --batch 6 \
    --expect "$fixtures/expected_single.f32" --tolerance 1e-3
  check record_nccl_trace python3 tools/record_torch_profile.py --nccl "$OUT/torch_profile_nccl"
  check report_nccl_trace build-torch/src/cli/ddpx report --torch-profile "$OUT/torch_profile_nccl/trace_rank0.json" \
    "$OUT/torch_profile_nccl/trace_rank1.json" --torch-batch 32
  cat "$OUT/report_nccl_trace.log"
else
  echo "SKIP: 2-rank NCCL runs and the NCCL trace need 2 GPUs ($gpus here)"
fi
exit $status
