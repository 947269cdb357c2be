#!/usr/bin/env bash
# ddpx's data-parallel NCCL path at world 2 and 4 on ONE GPU (issue 51 item 1), through NCCL 2.30's
# NCCL_MULTI_RANK_GPU_ENABLE (ddpx's --ranks-per-gpu K). One device call after bench/gpu-check.sh built ddpx and
# bench/nccl-build.sh built NCCL 2.30.7 under $NCCL_LIB. Parts (PARTS, default all, in this order):
#   allreduce  `ddpx allreduce --nproc-per-node W --ranks-per-gpu W` for W = 2, 4: nccl-tests' #wrong at every size
#   exact      W ranks of batch 8/W equal one rank of batch 8 on the same .npy data, vit_b_32 and the MLP, for plain
#              SGD, the recipe (warm-up + cosine, smoothing, clipping, EMA), CUDA graphs on, --grad-accum 2
#              (bench/weights_diff.py: the largest weight difference, and relative to the largest update)
#   tests      the GPU suite's multi-rank cases (CudaFamilyTraining.TwoGpusEqualOne..., CudaRanks.*: every hook, a
#              killed and a stopped rank), which share the GPU here
#   hooks      every --comm-hook at world 2 on Fashion-MNIST in bf16 (bench/hook_accuracy.py): top-1 per hook
#   faults     a rank SIGKILLed, then a rank SIGSTOPped, mid-run with --comm-timeout 10: seconds until the job
#              ended, its exit status and the line naming the rank
#   vitl       ViT-L/32 bf16 at world 2: steps/s, the breakdown ("parts add up"), the verdict, a trace
# Everything lands under $OUT/multirank (default ./out); summary.md is printed last.
# Usage (GPU machine, repo root): NCCL_LIB=/tmp/nccl-src/nccl/build/lib bash bench/nccl-multirank.sh
# Dry run of the flow on a CPU (Gloo ranks instead of one shared GPU; numbers mean nothing):
#   DEVICE=cpu PARTS="allreduce exact faults" EXACT_MODELS=mlp bash bench/nccl-multirank.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-out}/multirank
mkdir -p "$OUT_DIR"
DDPX=${DDPX:-build/src/cli/ddpx}
DEVICE=${DEVICE:-cuda}
PARTS=${PARTS:-allreduce exact tests hooks faults vitl}
EXACT_MODELS=${EXACT_MODELS:-mlp vit_b_32}
PYTHON=${PYTHON:-python3}
[[ $DEVICE == cpu && -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3  # Debian's numpy and torch on a CPU machine
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
SUMMARY=$OUT_DIR/summary.md
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

if [[ $DEVICE == cuda ]]; then
  NCCL_LIB=${NCCL_LIB:-/tmp/nccl-src/nccl/build/lib}
  [[ -e $NCCL_LIB/libnccl.so.2 ]] || { echo "no NCCL 2.30 at $NCCL_LIB (bench/nccl-build.sh builds it)"; exit 1; }
  export LD_LIBRARY_PATH=$NCCL_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  share() { echo "--ranks-per-gpu $1"; }  # W ranks on the one GPU
  MLP_SPEC="mlp:image=28,channels=1,layers=2,width=256,classes=10"
else
  share() { echo "--backend gloo --cpu-threads 1"; }
  MLP_SPEC="mlp:image=28,channels=1,layers=2,width=64,classes=10"
fi
say "# ddpx at world 2 and 4 on one $DEVICE device, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
[[ $DEVICE == cuda ]] && say "NCCL loaded from $NCCL_LIB: $(ls "$NCCL_LIB"/libnccl.so.2.* 2>/dev/null | xargs -n1 basename)"
"$DDPX" --version 2>&1 | tee -a "$SUMMARY"

part_allreduce() {
  say ""
  say "## allreduce (nccl-tests' #wrong at every size)"
  say "| world | sizes | rows | wrong values | bus bandwidth at the largest size (GB/s) |"
  say "|---|---|---|---|---|"
  for w in 2 4; do
    local log=$OUT_DIR/allreduce_w$w.txt sizes=1K:256M
    [[ $DEVICE == cpu ]] && sizes=1K:1M
    # shellcheck disable=SC2046
    timeout 300 "$DDPX" allreduce --device "$DEVICE" --nproc-per-node "$w" $( [[ $DEVICE == cuda ]] && share "$w") \
      --sizes "$sizes" >"$log" 2>&1
    local rc=$?
    # nccl-tests' rows: size count type redop root time algbw busbw #wrong (out of place), the same in place.
    # The launcher prefixes each line with "[rank R] "; without it the rows are nccl-tests' own.
    local rows wrong busbw table=$OUT_DIR/allreduce_w$w.rows
    sed -E 's/^\[rank [0-9]+\] //' "$log" | awk '$1 ~ /^[0-9]+$/ && NF >= 13' >"$table"
    rows=$(wc -l <"$table")
    wrong=$(awk '{w += $9 + $13} END {print w + 0}' "$table")
    busbw=$(awk '{b = $8} END {print b}' "$table")
    ((rows > 0)) || wrong="no rows read (see $log)"
    say "| $w | $sizes | $rows | $wrong$([[ $rc != 0 ]] && echo " (exit $rc)") | $busbw |"
  done
}

# W ranks each of batch 8/W against one rank of batch 8 (.npy data in global order: the same 8 images per step).
part_exact() {
  say ""
  say "## W ranks equal one rank with the whole batch (fp32, 6 steps, .npy data)"
  say "| model | configuration | world | max abs diff | relative to the largest update | verdict |"
  say "|---|---|---|---|---|---|"
  local data=$OUT_DIR/exact
  mkdir -p "$data"
  for model in $EXACT_MODELS; do
    local spec=$model shape="1 28 28" classes=10
    [[ $model == mlp ]] && spec=$MLP_SPEC
    [[ $model == vit_b_32 ]] && shape="3 224 224" classes=1000
    "$PYTHON" - "$data/$model" $shape $classes <<'EOF'
import sys
import numpy as np
prefix, c, h, w, classes = sys.argv[1], *map(int, sys.argv[2:6])
rng = np.random.default_rng(0)
np.save(prefix + "_images.npy", rng.standard_normal((96, c, h, w), dtype=np.float32))
np.save(prefix + "_labels.npy", rng.integers(0, classes, 96).astype(np.int32))
EOF
    # Every run starts from the same weights (`ddpx model --init`), which also give the update's scale.
    "$DDPX" model --brief --model "$spec" --init "$data/${model}_initial.safetensors" --seed 0 >/dev/null ||
      { say "| $model | | | | | FAILED: ddpx model --init |"; continue; }
    local common=(train --device "$DEVICE" --model "$spec" --precision fp32 --steps 6 --warmup 0 --workers 1
                  --images "$data/${model}_images.npy" --labels "$data/${model}_labels.npy" --comm-timeout 120
                  --optimizer sgd --lr 0.05 --momentum 0.9 --load "$data/${model}_initial.safetensors")
    local -A configs=(
      [plain]=""
      [recipe]="--lr-schedule cosine --lr-warmup-steps 2 --label-smoothing 0.1 --clip-grad-norm 0.5 --ema-decay 0.9 --weight-decay 5e-4 --no-decay"
      [graphs]="--cuda-graph on"
      [accum2]="--grad-accum 2"
    )
    for name in plain recipe graphs accum2; do
      [[ $name == graphs && $DEVICE == cpu ]] && continue
      local graph=()
      [[ $DEVICE == cuda && $name != graphs ]] && graph=(--cuda-graph off)
      # shellcheck disable=SC2206
      local extra=(${configs[$name]})
      local one=$data/${model}_${name}_w1.safetensors
      "$DDPX" "${common[@]}" "${graph[@]}" "${extra[@]}" --batch 8 --save "$one" >"$data/${model}_${name}_w1.log" 2>&1 ||
        { say "| $model | $name | 1 | | | FAILED (exit $?; $data/${model}_${name}_w1.log) |"; continue; }
      for w in 2 4; do
        local many=$data/${model}_${name}_w$w.safetensors
        # shellcheck disable=SC2046
        timeout 300 "$DDPX" "${common[@]}" "${graph[@]}" "${extra[@]}" --batch $((8 / w)) --nproc-per-node "$w" \
          $(share "$w") --save "$many" >"$data/${model}_${name}_w$w.log" 2>&1 ||
          { say "| $model | $name | $w | | | FAILED (exit $?; ${model}_${name}_w$w.log) |"; continue; }
        local line verdict=ok
        line=$("$PYTHON" bench/weights_diff.py "$one" "$many" --initial "$data/${model}_initial.safetensors")
        local diff rel
        diff=$(sed -E 's/.*max_abs_diff=([^ ]+).*/\1/' <<<"$line")
        rel=$(sed -E 's/.*relative=([^ ]+).*/\1/' <<<"$line")
        # fp32 rounding of per-rank partial sums: the difference is a few millionths of the update.
        awk -v r="$rel" 'BEGIN {exit !(r < 1e-4)}' || verdict=DIFFERS
        if [[ $name == recipe && -e ${one%.safetensors}.ema.safetensors ]]; then
          line=$("$PYTHON" bench/weights_diff.py "${one%.safetensors}.ema.safetensors" "${many%.safetensors}.ema.safetensors")
          diff="$diff (EMA $(sed -E 's/.*max_abs_diff=([^ ]+).*/\1/' <<<"$line"))"
        fi
        say "| $model | $name | $w | $diff | $rel | $verdict |"
      done
    done
  done
}

part_tests() {
  say ""
  say "## The GPU suite's multi-rank cases, the ranks sharing the GPU"
  local log=$OUT_DIR/multirank_tests.txt
  ctest --test-dir build -R "TwoGpusEqualOneGpu|CudaRanks\." --output-on-failure >"$log" 2>&1
  grep -E "tests passed|tests failed|Passed|Failed|Skipped|Not Run" "$log" | tee -a "$SUMMARY"
}

part_hooks() {
  say ""
  say "## Every hook at world 2 (one GPU), Fashion-MNIST, bf16"
  timeout 900 "$PYTHON" bench/hook_accuracy.py --ddpx "$DDPX" --work "$OUT_DIR/hooks" --device "$DEVICE" \
    --precision bf16 --launch "--nproc-per-node 2 $(share 2)" >"$OUT_DIR/hooks.txt" 2>&1
  local rc=$?
  grep -E "^\|" "$OUT_DIR/hooks.txt" | tee -a "$SUMMARY"
  [[ $rc == 0 ]] || say "hook_accuracy.py exit $rc: $(tail -3 "$OUT_DIR/hooks.txt")"
  cp "$OUT_DIR/hooks/hook_accuracy.json" "$OUT_DIR/" 2>/dev/null
}

# One fault: start a long 2-rank run, wait for its first progress line, signal rank 1's process, time the end.
fault_case() {
  local signal=$1 log=$OUT_DIR/fault_$1.txt timeout_s=10
  # shellcheck disable=SC2046
  "$DDPX" train --device "$DEVICE" --model "$MLP_SPEC" --data learnable --batch 32 --steps 1000000 --log-every 50 \
    --nproc-per-node 2 $(share 2) --comm-timeout "$timeout_s" >"$log" 2>&1 &
  local launcher=$!
  local waited=0
  until grep -q "step " "$log" 2>/dev/null || ((waited >= 600)); do sleep 0.1; waited=$((waited + 1)); done
  local victim
  victim=$(pgrep -P "$launcher" | sort -n | tail -1)
  local start end rc
  start=$(date +%s.%N)
  kill "-$signal" "$victim"
  local polls=0
  while kill -0 "$launcher" 2>/dev/null && ((polls < 1200)); do sleep 0.1; polls=$((polls + 1)); done
  end=$(date +%s.%N)
  if kill -0 "$launcher" 2>/dev/null; then
    kill -KILL "$victim" "$launcher" 2>/dev/null
    rc=hung
  else
    wait "$launcher"
    rc=$?
  fi
  kill -KILL "$victim" 2>/dev/null
  local named
  named=$(grep -m1 -iE "rank 1|timed out|watchdog|killed" "$log" | cut -c1-160)
  say "| SIG$signal to rank 1 | $timeout_s | $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') | $rc | ${named//|//} |"
}

part_faults() {
  say ""
  say "## A rank killed or stopped mid-run (world 2)"
  say "| fault | --comm-timeout (s) | job ended after (s) | exit | first line naming it |"
  say "|---|---|---|---|---|"
  fault_case KILL
  fault_case STOP
}

part_vitl() {
  say ""
  say "## ViT-L/32 bf16 at world 2 on one GPU"
  local log=$OUT_DIR/vitl_w2.txt
  # shellcheck disable=SC2046
  timeout 400 "$DDPX" train --device "$DEVICE" --model vit_l_32 --precision bf16 --batch 32 --steps 60 --data synthetic \
    --nproc-per-node 2 $(share 2) --comm-timeout 120 --report "$OUT_DIR/vitl_w2.json" \
    --trace "$OUT_DIR/vitl_w2.trace.json" >"$log" 2>&1
  say "exit $?"
  grep -E "summary:|parts add up|verdict|bound|exposed" "$log" | head -12 | tee -a "$SUMMARY"
}

for part in $PARTS; do "part_$part"; done
echo
echo "==== summary ($SUMMARY)"
cat "$SUMMARY"
