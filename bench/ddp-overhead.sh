#!/usr/bin/env bash
# DDP's cost at world 1 on one GPU, the optimizer overlapped with backward against after it, and the README job's
# input wait: ViT-L/32 bf16 batch 32, plain against --ddp with each hook (data generated on the GPU, so input
# never counts), then the README's job (host synthetic data, default loader threads). Prints each run's summary line,
# then issue 12's check: the verdict's DDP cost (calibrated, --calibrate-steps) against the median step
# difference to the plain run with the same graph setting, within 1 point of the step (bench/ddp_cost_check.py;
# exit status 1 when a pair misses). Each DDP run is paired with the plain run of its arithmetic: the cast and
# PowerSGD hooks read fp32 buckets, so theirs is --weight-grads fp32 (plain); the allreduce hook at one rank reads
# nothing and keeps the default bf16 weight gradients (comm_hook_reads_bucket, comm_plan/hook_catalogue.hpp;
# Note [bf16 weight gradients in their fp32 slots]), so `ddp` and `ddp_nograph` pair with plain_bf16_grads and
# plain_bf16_nograph.
# Usage (GPU machine, repo root, after a build):
#   bash bench/ddp-overhead.sh        (OUT, DDPX, STEPS as in bench/gpu-run.sh)
#   ONLY_COST=1 bash bench/ddp-overhead.sh   (only the runs the check needs)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
DDPX=${DDPX:-build/src/cli/ddpx}
STEPS=${STEPS:-120}
one() {  # name, data, flags...
  local name=$1 data=$2; shift 2
  timeout 240 "$DDPX" train --device cuda --model vit_l_32 --batch 32 --precision bf16 --steps "$STEPS" \
    --warmup 20 --calibrate-steps 3 --data "$data" --log-every 60 --report "$OUT/ovh_$name.json" "$@" >"$OUT/ovh_$name.log" 2>&1 \
    || tail -3 "$OUT/ovh_$name.log"
  printf '%-22s %s\n' "$name" "$(grep -E "^summary" "$OUT/ovh_$name.log" | head -1 | cut -c1-150)"
  grep -E "^verdict" "$OUT/ovh_$name.log" | cut -c1-200 | sed 's/^/    /'
}
one plain synthetic-device --weight-grads fp32
one plain_bf16_grads synthetic-device
one ddp synthetic-device --ddp
one ddp_bf16 synthetic-device --ddp --comm-hook bf16
one ddp_fp16 synthetic-device --ddp --comm-hook fp16
one ddp_psgd4 synthetic-device --ddp --comm-hook powersgd:4
one plain_bf16_nograph synthetic-device --cuda-graph off
one ddp_nograph synthetic-device --ddp --cuda-graph off
if [ -z "${ONLY_COST:-}" ]; then
  one plain_optimizer_overlap synthetic-device --optimizer-overlap on
  one ddp_optimizer_after synthetic-device --ddp --optimizer-overlap off
  one ddp_b2000 synthetic-device --ddp --bucket-mb 2000
  one readme_job synthetic
  one plain_again synthetic-device --weight-grads fp32
fi
echo
echo "# issue 12 point 1: the verdict's DDP cost against the median steps' difference (within 1 point)"
python3 bench/ddp_cost_check.py \
  "$OUT/ovh_ddp.json:$OUT/ovh_plain_bf16_grads.json" "$OUT/ovh_ddp_bf16.json:$OUT/ovh_plain.json" \
  "$OUT/ovh_ddp_fp16.json:$OUT/ovh_plain.json" "$OUT/ovh_ddp_psgd4.json:$OUT/ovh_plain.json" \
  "$OUT/ovh_ddp_nograph.json:$OUT/ovh_plain_bf16_nograph.json"
