#!/usr/bin/env bash
# The median phases of ViT-L/32 bf16 batch 32 runs that differ only in their flags: which --ddp setting moves which
# phase (docs/results.md, 2026-12-04: where --ddp's 0.1-0.3 ms at world 1 sits, not settled by four calls). Each
# argument is NAME=FLAGS (FLAGS may be empty); every run takes 200 steps after 20 warm-up steps with three
# calibration steps, data generated on the GPU, and writes its report to $OUT/NAME.json. Then prints, per run, the
# median step, forward, backward and optimizer over the measured steps, and the calibration steps' plain step and
# forward where there are any. ROUNDS=N (default 1) runs the whole list N times, in order, so the names interleave
# on the GPU; the table then takes medians over the rounds and prices every name against the first, round by round
# (bench/ddp_phases_summary.py): the measurement that a GPU drifting at its power cap moves least.
# Usage (GPU machine, repo root, after a build):
#   bash bench/ddp-phases.sh plain= ddp=--ddp "one_bucket=--ddp --bucket-mb 2000"
#   ROUNDS=5 bash bench/ddp-phases.sh "plain=--weight-grads fp32" ddp=--ddp
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
DDPX=${DDPX:-build/src/cli/ddpx}
STEPS=${STEPS:-200}
[[ $# -gt 0 ]] || { sed -n 2,12p "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-1}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ddp-phases: ROUNDS=$ROUNDS is not a positive whole number" >&2; exit 2; }
names=()
for spec in "$@"; do
  [[ "$spec" == *=* ]] || { echo "ddp-phases: '$spec' is not NAME=FLAGS (write plain= for no flags)" >&2; exit 2; }
  names+=("${spec%%=*}")
done
for ((round = 1; round <= ROUNDS; ++round)); do
  for spec in "$@"; do
    name=${spec%%=*}; flags=${spec#*=}
    file=$name; (( ROUNDS > 1 )) && file=$name.r$round
    # shellcheck disable=SC2086  # FLAGS is a list of flags
    timeout 240 "$DDPX" train --device cuda --model vit_l_32 --batch 32 --precision bf16 --steps "$STEPS" --warmup 20 \
      --calibrate-steps 3 --data synthetic-device --log-every 100 --report "$OUT/$file.json" $flags \
      >"$OUT/$file.log" 2>&1 || { echo "ddp-phases: run $file failed:" >&2; tail -3 "$OUT/$file.log" >&2; exit 1; }
    printf '%-24s %s\n' "$file" "$(grep -E '^summary' "$OUT/$file.log" | cut -c1-110)"
  done
done
python3 bench/ddp_phases_summary.py "$OUT" "$ROUNDS" "${names[@]}"
