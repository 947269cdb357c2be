#!/usr/bin/env bash
# One GPU session in as few device calls as a scarce machine allows (issue 51): each call runs the next steps that
# have not yet run on this warm machine (a marker per step under /tmp/ddpx-gpu-session), stopping before its time
# budget (BUDGET_S, default 540 s, under the device's 600 s per call). Every log goes to /tmp/ddpx-gpu-session/logs;
# $OUT gets few files (the device returns at most 8): logs.tgz of them all, and the summaries (multirank.md,
# tta.json, gpu-run.json where those steps ran).
# Steps, in order:
#   nccl     bench/nccl-build.sh start (NCCL 2.30.7 for sm_90 in the background; needs .gpudeps carried)
#   build    configure and build everything (Release, Ninja), as bench/gpu-check.sh does
#   check    the whole CTest suite (bench/gpu-check.sh's run), NCCL 2.30 loaded where it is built by then
#   multirank  bench/nccl-multirank.sh (world 2 and 4 on the one GPU), after waiting for NCCL
#   tta      bench/time_to_accuracy.py: ddpx against PyTorch (autocast bf16, torch.compile) to 90 and 91%
#   targets  bench/gpu-run.sh's step-target rows, PyTorch in the same call
# Usage (repo root, GPU machine; the same command for every call): bash bench/gpu-session.sh [STEP ...]
# Knobs: BUDGET_S; CHECK_REGEX and CHECK_JOBS (check: ctest -R and -j); PARTS (multirank: bench/nccl-multirank.sh's);
# MULTIRANK_RESERVE_S: the seconds multirank keeps for itself after waiting for NCCL (default 200).
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${OUT:-out}
mkdir -p "$RESULTS"
STATE=/tmp/ddpx-gpu-session
OUT=$STATE/logs  # every step's files; $RESULTS gets the archive and the summaries
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-540}
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(nccl build check multirank tta targets)
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PYTHONUNBUFFERED=1
NCCL_LIB=/tmp/nccl-src/nccl/build/lib
started=$SECONDS
left() { echo $((BUDGET_S - (SECONDS - started))); }

# The data and libraries bench/gpu-deps.sh carried, where the tests look for them.
if [[ -d .gpudeps/fashion-mnist && ! -d /usr/share/datasets/fashion-mnist ]]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp .gpudeps/fashion-mnist/* /usr/share/datasets/fashion-mnist/
fi
skimage_data=/usr/lib/python3/dist-packages/skimage/data
[[ -d .gpudeps/photos && ! -d $skimage_data ]] && mkdir -p "$skimage_data" && cp .gpudeps/photos/* "$skimage_data/"
prefix=()
[[ -d .gpudeps/root/usr ]] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.gpudeps/root/usr") &&
  export CMAKE_PREFIX_PATH="$PWD/.gpudeps/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
nccl_ready() { [[ -e $NCCL_LIB/libnccl.so.2 && -e /tmp/nccl-src/build.rc && $(cat /tmp/nccl-src/build.rc) == 0 ]]; }

step_nccl() { bash bench/nccl-build.sh start; }
step_build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; return 1; }
  cmake --build build -j "$(nproc)" >"$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; return 1; }
  build/src/cli/ddpx --version
}
step_check() {
  nvidia-smi -L
  local env=()
  nccl_ready && env=(env LD_LIBRARY_PATH="$NCCL_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") &&
    echo "NCCL 2.30 loaded for the suite: the multi-rank GPU cases run on this one GPU"
  # CHECK_REGEX: only the tests it matches (ctest -R), when a call has no time for the whole suite.
  local only=()
  [[ -n ${CHECK_REGEX:-} ]] && only=(-R "$CHECK_REGEX") && echo "only the tests matching: $CHECK_REGEX"
  "${env[@]}" ctest --test-dir build -j "${CHECK_JOBS:-4}" --timeout 300 --output-on-failure "${only[@]}" \
    >"$OUT/ctest.log" 2>&1
  local status=$?
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped\)" "$OUT/ctest.log" | tail -25
  build/src/cli/ddpx topo 2>&1 | head -12
  return $status
}
step_multirank() {
  WAIT_S=$(($(left) - ${MULTIRANK_RESERVE_S:-200})) bash bench/nccl-build.sh wait || return 1
  OUT=$OUT NCCL_LIB=$NCCL_LIB timeout $(($(left) - 10)) bash bench/nccl-multirank.sh | tail -60
}
step_tta() {
  timeout $(($(left) - 10)) python3 bench/time_to_accuracy.py --ddpx build/src/cli/ddpx --work "$OUT/tta" \
    --fashion-mnist /usr/share/datasets/fashion-mnist | tail -14
}
step_targets() {
  ROWS="bf16 bf16_ddp1 bf16_ddp1_powersgd4 b16_bf16 compile_ro_bf16 compile_ro_bf16_b16" STEPS=60 \
    OUT=$OUT/targets timeout $(($(left) - 10)) bash bench/gpu-run.sh 2>&1 | tail -30
}

for step in "${STEPS[@]}"; do
  [[ -e $STATE/$step.done ]] && { echo "== $step: done in an earlier call"; continue; }
  if (($(left) < 60)); then echo "== $step: not started (${BUDGET_S} s budget of this call spent); call again"; break; fi
  echo "== $step ($(left) s left in this call)"
  "step_$step" 2>&1 | tee "$OUT/$step.txt"
  status=${PIPESTATUS[0]}
  echo "== $step: exit $status after $((SECONDS - started)) s"
  [[ $status == 0 || $step == check ]] && touch "$STATE/$step.done"
  [[ $step == build && $status != 0 ]] && break
done
cp "$OUT/multirank/summary.md" "$RESULTS/multirank.md" 2>/dev/null
cp "$OUT/tta/tta.json" "$RESULTS/tta.json" 2>/dev/null
tar czf "$RESULTS/logs.tgz" -C "$OUT" --exclude '*.npy' --exclude '*.safetensors' --exclude 'build*' . 2>/dev/null
