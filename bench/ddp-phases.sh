#!/usr/bin/env bash
# The median phases of ViT-L/32 bf16 batch 32 runs that differ only in their flags: which --ddp setting moves which
# phase (docs/results.md, 2026-12-04: where --ddp's 0.1-0.3 ms at world 1 sits, not settled by four calls). Each
# argument is NAME=FLAGS (FLAGS may be empty); every run takes 200 steps after 20 warm-up steps with three
# calibration steps, data generated on the GPU, and writes its report to $OUT/NAME.json. Then prints, per run, the
# median step, forward, backward and optimizer over the measured steps, and the calibration steps' plain step and
# forward where there are any. Usage (GPU machine, repo root, after a build):
#   bash bench/ddp-phases.sh plain= ddp=--ddp "one_bucket=--ddp --bucket-mb 2000"
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
DDPX=${DDPX:-build/src/cli/ddpx}
STEPS=${STEPS:-200}
[[ $# -gt 0 ]] || { sed -n 2,8p "$0" >&2; exit 2; }
names=()
for spec in "$@"; do
  [[ "$spec" == *=* ]] || { echo "ddp-phases: '$spec' is not NAME=FLAGS (write plain= for no flags)" >&2; exit 2; }
  name=${spec%%=*}; flags=${spec#*=}
  # shellcheck disable=SC2086  # FLAGS is a list of flags
  timeout 240 "$DDPX" train --device cuda --model vit_l_32 --batch 32 --precision bf16 --steps "$STEPS" --warmup 20 \
    --calibrate-steps 3 --data synthetic-device --log-every 100 --report "$OUT/$name.json" $flags \
    >"$OUT/$name.log" 2>&1 || { echo "ddp-phases: run $name failed:" >&2; tail -3 "$OUT/$name.log" >&2; exit 1; }
  printf '%-24s %s\n' "$name" "$(grep -E '^summary' "$OUT/$name.log" | cut -c1-110)"
  names+=("$name")
done
python3 - "$OUT" "${names[@]}" <<'PY'
import json, os, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
print(f"# {'run':<22} {'step':>7} {'forward':>8} {'backward':>9} {'optimizer':>10}  calibration (step / forward)")
for name in names:
    rank = json.load(open(os.path.join(out, name + ".json")))["ranks"][0]
    med = lambda key: statistics.median(s["phases"][key] for s in rank["steps"])
    cal = [c["plain"] for c in rank.get("calibration") or []]
    cal_text = " ".join(f"{c['total_ms']:.3f} / {c['forward_ms']:.3f}" for c in cal)
    print(f"  {name:<22} {med('total_ms'):7.3f} {med('forward_ms'):8.3f} {med('backward_ms'):9.3f} "
          f"{med('optimizer_ms'):10.3f}  {cal_text}")
PY
